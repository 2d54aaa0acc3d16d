"""snapshot, revert, list_snapshots, diff: save and restore the agent's files (tests, candidates, notes)."""

from __future__ import annotations

import difflib

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.workspace import Workspace, snapshot_store

LEFT_OUT = "items of the list above left out to keep the result small (0: it is complete)"


class SnapshotResult(BaseModel):
    snapshot_id: int
    label: str
    created: str
    files: list[str] = Field(description="the files recorded, the first 100 in path order")
    files_left_out: int = Field(description=LEFT_OUT + "; list_snapshots counts them all")


class RevertResult(BaseModel):
    reverted_to: int
    backup_snapshot_id: int | None = Field(description="snapshot of the files as they were just before the revert (None when nothing changed)")
    restored: list[str] = Field(description="files written back (the first 100)")
    restored_left_out: int = Field(description=LEFT_OUT)
    deleted: list[str] = Field(description="files created after the snapshot, removed (the first 100)")
    deleted_left_out: int = Field(description=LEFT_OUT)


class SnapshotSummary(BaseModel):
    snapshot_id: int
    label: str
    created: str
    file_count: int


class ListSnapshotsResult(BaseModel):
    snapshots: list[SnapshotSummary] = Field(description="the newest 100 snapshots, oldest first")
    snapshots_left_out: int = Field(description="older snapshots not listed (their ids are below the first listed)")


class DiffResult(BaseModel):
    from_id: int
    to_id: int | None = Field(description="None: compared with the current files")
    added: list[str] = Field(description="files added (only `path` when given; the first ones when many)")
    added_left_out: int = Field(description=LEFT_OUT)
    removed: list[str] = Field(description="files removed (as for added)")
    removed_left_out: int = Field(description=LEFT_OUT)
    modified: list[str] = Field(description="files changed (as for added)")
    modified_left_out: int = Field(description=LEFT_OUT)
    files: dict[str, int] = Field(description="changed lines (added plus removed) per file in the whole diff (as for added)")
    files_left_out: int = Field(description="files changed but not in `files`; give `path` for one file's diff")
    diff: str = Field(description="one page of the unified diff, " + paging.PAGE_TEXT + ", ending at a line end")
    offset: int = Field(description="character offset of this page in the whole diff")
    next_offset: int | None = Field(description="offset of the next page; null: the page ends the diff")
    total_chars: int
    truncated: bool = Field(description="more of the diff follows this page")
    more: str | None = Field(description="how to read the rest; null when nothing is left")


def snapshot(root: SandboxRoot, workspace: str, label: str) -> SnapshotResult:
    opened = Workspace.open_intact(root, workspace)
    with opened.lock():
        taken = snapshot_store.take(opened, label)
    files, left_out = paging.fit(sorted(taken.files))
    return SnapshotResult(snapshot_id=taken.snapshot_id, label=taken.label, created=taken.created, files=files, files_left_out=left_out)


def revert(root: SandboxRoot, workspace: str, snapshot_id: int) -> RevertResult:
    opened = Workspace.open_intact(root, workspace)
    with opened.lock():
        target = snapshot_store.load(opened, snapshot_id)
        backup_id = None
        if snapshot_store.current_files(opened) != target.files:
            # Nothing the agent wrote is lost: the state being replaced is kept as a snapshot.
            backup_id = snapshot_store.take(opened, f"before revert to {snapshot_id}").snapshot_id
        restored, deleted = snapshot_store.restore(opened, target)
    (restored, restored_left_out), (deleted, deleted_left_out) = paging.fit(restored, budget=paging.LIST_BYTES // 2), paging.fit(deleted, budget=paging.LIST_BYTES // 2)
    return RevertResult(
        reverted_to=snapshot_id, backup_snapshot_id=backup_id, restored=restored, restored_left_out=restored_left_out, deleted=deleted, deleted_left_out=deleted_left_out
    )


def list_snapshots(root: SandboxRoot, workspace: str) -> ListSnapshotsResult:
    opened = Workspace.open_intact(root, workspace)
    every = snapshot_store.all_snapshots(opened)
    newest = [SnapshotSummary(snapshot_id=s.snapshot_id, label=s.label, created=s.created, file_count=len(s.files)) for s in reversed(every)]
    shown, left_out = paging.fit(newest, budget=paging.PAGE_BYTES)
    return ListSnapshotsResult(snapshots=shown[::-1], snapshots_left_out=left_out)


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
        named, left_out = paging.fit(changed, limit=20, budget=2_000)
        listed = ", ".join(named) + (f" and {left_out:,} more (call diff without path to count them all)" if left_out else "")
        raise ToolError(f"{path} did not change between these snapshots; the changed files are: {listed or 'none'}.")
    shown = [path] if path is not None else changed
    per_file: dict[str, list[str]] = {}
    for rel in shown:
        old = _lines(snapshot_store.read_blob(opened, before[rel])) if rel in before else []
        new = _lines(read_after(rel)) if rel in after else []
        per_file[rel] = list(difflib.unified_diff(old, new, f"snapshot {from_id}/{rel}", f"{to_label}/{rel}"))
    text = "".join(line for rel in shown for line in per_file[rel])
    if not 0 <= offset <= len(text):
        raise ToolError(f"offset {offset} is past the end of the diff ({len(text)} characters); give a next_offset a page returned.")
    page, next_offset = paging.cut(text, offset)
    call = f"diff(workspace, {from_id}, {to_id}" + (f", path={path!r}" if path is not None else "") + ", offset={offset})"
    more = paging.more_line(len(text) - (next_offset or 0), "characters", next_offset, call)
    quarter = paging.LIST_BYTES // 4
    lists = {name: paging.fit([rel for rel in names if rel in per_file], budget=quarter) for name, names in (("added", added), ("removed", removed), ("modified", modified))}
    counted, files_left_out = paging.fit([(rel, sum(1 for line in lines[2:] if line[:1] in "+-")) for rel, lines in per_file.items()], budget=quarter)
    return DiffResult(
        from_id=from_id,
        to_id=to_id,
        added=lists["added"][0],
        added_left_out=lists["added"][1],
        removed=lists["removed"][0],
        removed_left_out=lists["removed"][1],
        modified=lists["modified"][0],
        modified_left_out=lists["modified"][1],
        files=dict(counted),
        files_left_out=files_left_out,
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
