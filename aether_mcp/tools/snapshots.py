"""snapshot, revert, list_snapshots, diff: save and restore the agent's files (tests, candidates, notes)."""

from __future__ import annotations

import difflib

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.workspace import Workspace, snapshot_store


class SnapshotResult(BaseModel):
    snapshot_id: int
    label: str
    created: str
    files: list[str]


class RevertResult(BaseModel):
    reverted_to: int
    backup_snapshot_id: int | None = Field(description="snapshot of the files as they were just before the revert (None when nothing changed)")
    restored: list[str] = Field(description="files written back")
    deleted: list[str] = Field(description="files created after the snapshot, removed")


class SnapshotSummary(BaseModel):
    snapshot_id: int
    label: str
    created: str
    file_count: int


class ListSnapshotsResult(BaseModel):
    snapshots: list[SnapshotSummary]


class DiffResult(BaseModel):
    from_id: int
    to_id: int | None = Field(description="None: compared with the current files")
    added: list[str]
    removed: list[str]
    modified: list[str]
    files: dict[str, int] = Field(description="changed lines (added plus removed) per file in the whole diff")
    diff: str = Field(description="one page of the unified diff, at most 40,000 characters, ending at a line end")
    offset: int = Field(description="character offset of this page in the whole diff")
    next_offset: int | None = Field(description="offset of the next page; null: the page ends the diff")
    total_chars: int
    truncated: bool = Field(description="more of the diff follows this page")
    more: str | None = Field(description="how to read the rest; null when nothing is left")


def snapshot(root: SandboxRoot, workspace: str, label: str) -> SnapshotResult:
    opened = Workspace.open_intact(root, workspace)
    with opened.lock():
        taken = snapshot_store.take(opened, label)
    return SnapshotResult(snapshot_id=taken.snapshot_id, label=taken.label, created=taken.created, files=sorted(taken.files))


def revert(root: SandboxRoot, workspace: str, snapshot_id: int) -> RevertResult:
    opened = Workspace.open_intact(root, workspace)
    with opened.lock():
        target = snapshot_store.load(opened, snapshot_id)
        backup_id = None
        if snapshot_store.current_files(opened) != target.files:
            # Nothing the agent wrote is lost: the state being replaced is kept as a snapshot.
            backup_id = snapshot_store.take(opened, f"before revert to {snapshot_id}").snapshot_id
        restored, deleted = snapshot_store.restore(opened, target)
    return RevertResult(reverted_to=snapshot_id, backup_snapshot_id=backup_id, restored=restored, deleted=deleted)


def list_snapshots(root: SandboxRoot, workspace: str) -> ListSnapshotsResult:
    opened = Workspace.open_intact(root, workspace)
    return ListSnapshotsResult(
        snapshots=[
            SnapshotSummary(snapshot_id=s.snapshot_id, label=s.label, created=s.created, file_count=len(s.files))
            for s in snapshot_store.all_snapshots(opened)
        ]
    )


def diff(root: SandboxRoot, workspace: str, from_id: int, to_id: int | None = None, path: str | None = None, offset: int = 0) -> DiffResult:
    """One page of the unified diff between two snapshots (or a snapshot and the current files); `path`: one file's only."""
    opened = Workspace.open_intact(root, workspace)
    before = snapshot_store.load(opened, from_id).files
    if to_id is None:
        after = snapshot_store.current_files(opened)
        files = opened.editable_files()
        read_after = lambda rel: files[rel].read_bytes()  # noqa: E731
        to_label = "current"
    else:
        after = snapshot_store.load(opened, to_id).files
        read_after = lambda rel: snapshot_store.read_blob(opened, after[rel])  # noqa: E731
        to_label = f"snapshot {to_id}"
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    modified = sorted(rel for rel in set(before) & set(after) if before[rel] != after[rel])
    changed = sorted(added + removed + modified)
    if path is not None and path not in changed:
        raise ToolError(f"{path} did not change between these snapshots; the changed files are: {', '.join(changed) or 'none'}.")
    per_file: dict[str, list[str]] = {}
    for rel in changed:
        old = _lines(snapshot_store.read_blob(opened, before[rel])) if rel in before else []
        new = _lines(read_after(rel)) if rel in after else []
        per_file[rel] = list(difflib.unified_diff(old, new, f"snapshot {from_id}/{rel}", f"{to_label}/{rel}"))
    text = "".join(line for rel in ([path] if path is not None else changed) for line in per_file[rel])
    if not 0 <= offset <= len(text):
        raise ToolError(f"offset {offset} is past the end of the diff ({len(text)} characters); give a next_offset a page returned.")
    page, next_offset = paging.cut(text, offset)
    call = f"diff(workspace, {from_id}, {to_id}" + (f", path={path!r}" if path is not None else "") + ", offset={offset})"
    more = paging.more_line(len(text) - (next_offset or 0), "characters", next_offset, call)
    return DiffResult(
        from_id=from_id,
        to_id=to_id,
        added=added,
        removed=removed,
        modified=modified,
        files={rel: sum(1 for line in lines[2:] if line[:1] in "+-") for rel, lines in per_file.items()},
        diff=page,
        offset=offset,
        next_offset=next_offset,
        total_chars=len(text),
        truncated=next_offset is not None,
        more=more,
    )



def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
