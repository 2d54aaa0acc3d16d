"""byte_compare and audit_candidate results per candidate, kept for every content they judged.

A result describes the bytes it judged: the candidate file, the original and the candidate's
deviation file, each by digest. A result is current while all three are unchanged, whatever
happened in between (an optimization step that was reverted byte for byte brings its results
back). Among the current results, a disproof (a mismatch, a blocking finding) outweighs any
number of later clean runs, since re-running until a random sample misses the difference is
not evidence; otherwise the strongest result shows: a verdict over no verdict, then the most
compared rows.

Each result is signed with the server's key (aether_mcp.workspace.sign) over everything it says,
its digests included. A result whose signature is missing or does not match (edited by hand, or
written by another server) is not a result: readers skip it, and `ignored` counts them so the
tools that read results can say so.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any, Literal

from aether_mcp.workspace import CANDIDATE_DIR, ORIGINAL_MODULE, Workspace, deviations, sign

Kind = Literal["compares", "audits"]
KEPT_PER_CANDIDATE = 200  # the oldest results beyond this are dropped
SIGNATURE = "signature"


def state_digests(workspace: Workspace, name: str) -> dict[str, str | None]:
    """The digests a result of `name` is valid for: candidate file, original, deviation file."""
    return {
        "candidate_digest": _digest(workspace.path / CANDIDATE_DIR / f"{name}.py"),
        "original_digest": _digest(workspace.path / ORIGINAL_MODULE),
        "deviations_digest": _digest(deviations.path_for(workspace, name)),
    }


def record(workspace: Workspace, kind: Kind, name: str, entry: dict[str, Any]) -> None:
    """Add a result of candidate `name` as judged now (its digests are taken here, under the lock)."""
    path = _path(workspace, kind)
    with workspace.lock():
        data = _read(path)
        history = _entries(data.get(name))  # unsigned entries are kept as they are, and skipped by readers
        signed = {**entry, **state_digests(workspace, name)}
        history.append({**signed, SIGNATURE: _signature(signed)})
        data[name] = history[-KEPT_PER_CANDIDATE:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")


def candidates(workspace: Workspace, kind: Kind) -> list[str]:
    return sorted(_read(_path(workspace, kind)))


def current_results(workspace: Workspace, kind: Kind, name: str) -> list[dict[str, Any]]:
    """Every recorded result of `name` that judged exactly the files as they are now, oldest first."""
    now = state_digests(workspace, name)
    return [entry for entry in _history(_read(_path(workspace, kind)).get(name)) if _matches(entry, now)]


def passed_bytes(workspace: Workspace, name: str, candidate_digest: str) -> bool:
    """Whether audit_candidate passed candidate `name` with exactly these bytes (by SHA-256) against the
    original as it is now, with no disproof of those bytes recorded since: an earlier version that
    try_optimization sends beside the current one is held to what its own audit found."""
    original = _digest(workspace.path / ORIGINAL_MODULE)
    judged = [
        entry for entry in _history(_read(_path(workspace, "audits")).get(name))
        if entry.get("candidate_digest") == candidate_digest and entry.get("original_digest", original) == original
    ]
    return bool(judged) and _positive("audits", strongest("audits", judged))


def shown(workspace: Workspace, kind: Kind, name: str) -> tuple[dict[str, Any] | None, bool]:
    """(the result to show for `name`, stale): the strongest current one, else the latest one (stale)."""
    current = current_results(workspace, kind, name)
    if current:
        return strongest(kind, current), False
    history = _history(_read(_path(workspace, kind)).get(name))
    return (history[-1], True) if history else (None, False)


def strongest(kind: Kind, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The latest disproof if there is one, else the verdict on the most rows, else the latest entry."""
    disproofs = [e for e in entries if _disproves(kind, e)]
    if disproofs:
        return disproofs[-1]
    positive = [e for e in entries if _positive(kind, e)]
    if positive:
        return max(reversed(positive), key=lambda e: int(e.get("rows_compared") or 0))
    return entries[-1]


def _disproves(kind: Kind, entry: dict[str, Any]) -> bool:
    if kind == "compares":
        return entry.get("equal") is False
    return str(entry.get("verdict", "")).startswith("FAIL") and (int(entry.get("blocking") or 0) > 0 or entry.get("comparison_equal") is False)


def _positive(kind: Kind, entry: dict[str, Any]) -> bool:
    return entry.get("equal") is True if kind == "compares" else str(entry.get("verdict", "")).startswith("PASS")


def _matches(entry: dict[str, Any], now: dict[str, str | None]) -> bool:
    # results recorded before the original and deviation digests were kept judged the candidate file only
    return all(entry.get(key, now[key] if key != "candidate_digest" else None) == value for key, value in now.items())


def ignored(workspace: Workspace, kind: Kind, name: str) -> int:
    """How many recorded results of `name` are skipped because their signature is missing or wrong."""
    return len(_entries(_read(_path(workspace, kind)).get(name))) - len(_history(_read(_path(workspace, kind)).get(name)))


def _history(value: Any) -> list[dict[str, Any]]:
    """The results that carry this server's signature over what they say."""
    return [entry for entry in _entries(value) if _signed(entry)]


def _entries(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):  # one entry per candidate, as older workspaces recorded it
        return [value]
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _signature(entry: dict[str, Any]) -> str:
    return sign(json.dumps({key: value for key, value in entry.items() if key != SIGNATURE}, sort_keys=True))


def _signed(entry: dict[str, Any]) -> bool:
    found = entry.get(SIGNATURE)
    return isinstance(found, str) and hmac.compare_digest(found, _signature(entry))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _path(workspace: Workspace, kind: Kind) -> Path:
    return workspace.state_dir / "runs" / f"{kind}.json"


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
