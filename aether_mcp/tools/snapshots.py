"""snapshot, revert, list_snapshots, diff: save and restore the agent's files (tests, candidates, notes)."""

from __future__ import annotations

import difflib
from pydantic import BaseModel, Field

from aether_mcp import snapshot_store
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.workspace import Workspace

MAX_DIFF_CHARS = 64 * 1024


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
    diff: str = Field(description="unified diff, capped at 64 KiB")
    truncated: bool


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


def diff(root: SandboxRoot, workspace: str, from_id: int, to_id: int | None = None) -> DiffResult:
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
    chunks: list[str] = []
    for rel in sorted(added + removed + modified):
        old = _lines(snapshot_store.read_blob(opened, before[rel])) if rel in before else []
        new = _lines(read_after(rel)) if rel in after else []
        chunks.extend(difflib.unified_diff(old, new, f"snapshot {from_id}/{rel}", f"{to_label}/{rel}"))
    text = "".join(chunks)
    return DiffResult(
        from_id=from_id,
        to_id=to_id,
        added=added,
        removed=removed,
        modified=modified,
        diff=text[:MAX_DIFF_CHARS],
        truncated=len(text) > MAX_DIFF_CHARS,
    )



def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
