"""Frozen tests: once the phase-1 gates hold, the test files are fixed until an unfreeze is logged.

The freeze records every file under tests/ by SHA-256 and the number of cases, signed with the
key kept outside the workspace; each freeze and unfreeze is appended to a signed log. Tools that
judge a candidate refuse while frozen tests differ from the record, so deleting or weakening a
test to make a candidate pass is never silent.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.workspace import TESTS_DIR, Workspace, key_id, sign, snapshot_store

FREEZE_FILE = "freeze.json"
FREEZE_LOG = "freeze_log.jsonl"


def test_files(workspace: Workspace) -> dict[str, str]:
    return {rel: digest for rel, digest in snapshot_store.current_files(workspace).items() if rel.startswith(f"{TESTS_DIR}/")}


def freeze_record(workspace: Workspace) -> dict[str, Any] | None:
    """The signed freeze record, None when not frozen; a ToolError when the record was tampered with.

    A record signed under another key (another HOME or state folder) is re-signed when the test
    files are still exactly the ones it lists. `aether-mcp verify` consults no freeze at all.
    """
    if workspace.from_scratch:
        return None
    path = workspace.state_dir / FREEZE_FILE
    if not path.exists():
        log = freeze_log(workspace)
        if log and log[-1]["event"] == "freeze":
            raise ToolError(
                "the tests were frozen but the freeze record under .aether/ was deleted outside the server; "
                "restore the test files from a snapshot (revert) and call freeze_tests again, or unfreeze_tests(workspace, reason)."
            )
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        body = record["body"]
        valid = sign(json.dumps(body, sort_keys=True)) == record["signature"]
    except (OSError, ValueError, KeyError, TypeError):
        record, body, valid = {}, None, False
    if not valid and body is not None and record.get("key_id") != key_id() and body.get("files") == test_files(workspace):
        _write_record(workspace, body)  # signed elsewhere, and the tests are exactly as it says: keep it
        valid = True
    if not valid:
        raise ToolError("the freeze record under .aether/ was changed outside the server; call unfreeze_tests(workspace, reason) and freeze again.")
    return body


def changed_since_freeze(workspace: Workspace) -> list[str]:
    record = freeze_record(workspace)
    if record is None:
        return []
    now = test_files(workspace)
    frozen = record["files"]
    return sorted(rel for rel in set(now) | set(frozen) if now.get(rel) != frozen.get(rel))


def require_frozen_tests_intact(workspace: Workspace, tool: str) -> None:
    """Refuse to judge a candidate while frozen tests differ from their record."""
    if workspace.from_scratch:
        return  # verify judges the cases as they are, and says so
    changed = changed_since_freeze(workspace)
    if changed:
        raise ToolError(
            f"{tool} refuses: the tests are frozen and these files changed since: {', '.join(changed)}. "
            "Restore them (list_snapshots, then revert), or call unfreeze_tests(workspace, reason): the unfreeze is logged and reported."
        )


def refuse_if_frozen(workspace: Workspace, tool: str) -> None:
    record = freeze_record(workspace)
    if record is not None:
        raise ToolError(f"the tests are frozen (since {record['time']}); {tool} would change them. Call unfreeze_tests(workspace, reason) first: it is logged.")


def freeze(workspace: Workspace) -> dict[str, Any]:
    body = {
        "time": _now(),
        "files": test_files(workspace),
        "cases": len(read_case_rows(workspace.path / TESTS_DIR / "cases.py")),
    }
    _write_record(workspace, body)
    _log(workspace, {"event": "freeze", "time": body["time"], "cases": body["cases"], "files": sorted(body["files"])})
    return body


def _write_record(workspace: Workspace, body: dict[str, Any]) -> None:
    record = {"body": body, "signature": sign(json.dumps(body, sort_keys=True)), "key_id": key_id()}
    (workspace.state_dir / FREEZE_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")


def unfreeze(workspace: Workspace, reason: str) -> dict[str, Any]:
    changed = changed_since_freeze(workspace)
    (workspace.state_dir / FREEZE_FILE).unlink()
    entry = {"event": "unfreeze", "time": _now(), "reason": reason, "changed": changed}
    _log(workspace, entry)
    return entry


def freeze_log(workspace: Workspace) -> list[dict[str, Any]]:
    path = workspace.state_dir / FREEZE_LOG
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            entry = record["entry"]
            entry["verified"] = sign(json.dumps(entry, sort_keys=True)) == record["signature"]
            entries.append(entry)
        except (ValueError, KeyError, TypeError):
            entries.append({"event": "unreadable", "verified": False})
    return entries


def _log(workspace: Workspace, entry: dict[str, Any]) -> None:
    with open(workspace.state_dir / FREEZE_LOG, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"entry": entry, "signature": sign(json.dumps(entry, sort_keys=True))}) + "\n")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
