"""The judge's secret seeds: drawn fresh, recorded where only the server reads them, pinnable to replay a draw.

Every random draw the judge makes (byte_compare's hidden rows and batch layouts, the audit's watched
rows and layouts, the probes of mutation_score, scan_project's timing rows) starts from a seed drawn
here, and so does the benchmark's order of runs (which its application is given, and which results
report anyway). The agent never sees the judge's: each is appended to the server's own record,
`draws/DATE.jsonl` in the state folder (state_home), which is outside every workspace and hidden from
every confined process like the manifest key beside it. A line holds the time, the call (one id for
every seed of one tool call, nested calls included), the tool, the workspace, the seed's name and value.

To replay a draw, give the server the seeds of that call as AETHER_MCP_SEEDS, a JSON object from name
to seed (for example {"byte_compare.hidden": 123, "byte_compare.layout": 456}); a name drawn more than
once in one call is numbered from its second draw on ("byte_compare.top_up#2"). Names not given are
drawn fresh, and a pinned seed is recorded as pinned. Pins are for replaying a failure only: a server
left with them draws the same rows for every call, which an agent could learn and tune to.

A record that cannot be written (a full or read-only state folder) does not stop the judge: the call
goes on, unrecorded, and says so on the server's standard error. Records older than RECORD_DAYS are removed.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
PIN_VARIABLE = "AETHER_MCP_SEEDS"
RECORD_FOLDER = "draws"
RECORD_DAYS = 30


@dataclass
class _Call:
    call_id: str
    tool: str
    workspace: str
    counts: dict[str, int] = field(default_factory=dict)


_current: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("aether_draws_call", default=None)
_write_lock = threading.Lock()
_pruned = False


@contextlib.contextmanager
def call(tool: str, workspace: str = "") -> Iterator[str]:
    """The seeds drawn inside belong to one call of `tool` (a call already open keeps them: an audit's byte_compare is the audit's)."""
    open_call = _current.get()
    if open_call is not None:
        yield open_call.call_id
        return
    token = _current.set(_Call(f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(4)}", tool, workspace))
    try:
        yield _current.get().call_id  # type: ignore[union-attr]
    finally:
        _current.reset(token)


def recorded_call(tool: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A tool function whose seeds are recorded as one call of `tool`, with its `workspace` argument."""

    def wrap(function: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def recorded(*args: Any, **kwargs: Any) -> T:
            workspace = signature.bind_partial(*args, **kwargs).arguments.get("workspace", "")
            with call(tool, str(workspace)):
                return function(*args, **kwargs)

        return recorded

    return wrap


def seed(name: str, bits: int = 64) -> int:
    """A fresh secret seed of `bits` bits for the draw `name` (or the pinned one), recorded in the server's state folder."""
    current = _current.get() or _Call(f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(4)}", name.split(".")[0], "")
    count = current.counts.get(name, 0) + 1
    current.counts[name] = count
    key = name if count == 1 else f"{name}#{count}"
    pinned = _pinned().get(key)
    value = pinned if pinned is not None else secrets.randbits(bits)
    _record({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "call": current.call_id, "tool": current.tool, "workspace": current.workspace, "name": key, "seed": value, "pinned": pinned is not None})
    return value


def _pinned() -> dict[str, int]:
    text = os.environ.get(PIN_VARIABLE)
    if not text:
        return {}
    try:
        pins = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{PIN_VARIABLE} is not JSON ({exc}): give an object from seed name to integer, as the draw record lists them") from None
    if not isinstance(pins, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in pins.items()):
        raise ValueError(f"{PIN_VARIABLE} must be a JSON object from seed name to a non-negative integer, as the draw record lists them")
    return pins


def record_path() -> os.PathLike[str]:
    """Today's record of drawn seeds."""
    from aether_mcp.workspace import state_home

    return state_home() / RECORD_FOLDER / f"{time.strftime('%Y-%m-%d', time.gmtime())}.jsonl"


def _record(entry: dict) -> None:
    global _pruned
    from pathlib import Path

    path = Path(record_path())
    line = json.dumps(entry, sort_keys=True) + "\n"
    with _write_lock:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line)
            if not _pruned:
                _pruned = True
                for old in path.parent.glob("*.jsonl"):
                    if time.time() - old.stat().st_mtime > RECORD_DAYS * 86_400:
                        old.unlink(missing_ok=True)
        except OSError as exc:  # the verdict does not depend on the record; a replay of this call will not be possible
            print(f"aether-mcp: the seed {entry['name']} of {entry['tool']} could not be recorded in {path.parent} ({exc})", file=sys.stderr)


def recorded(call_id: str | None = None) -> list[dict]:
    """Entries of the record, oldest day first (of one call, when given): what a replay needs."""
    from pathlib import Path

    entries = []
    for path in sorted(Path(record_path()).parent.glob("*.jsonl")):
        entries += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [e for e in entries if call_id is None or e.get("call") == call_id]
