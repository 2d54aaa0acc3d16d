"""Snapshots of a workspace's editable files, in a content-addressed store under `.aether/`.

A snapshot records every editable file (tests, candidates, notes) by SHA-256; blobs live in
`.aether/objects/`, manifests in `.aether/snapshots/<id>.json`. Ids count up from 0 (taken by
init_workspace). Restoring writes files back byte for byte and deletes editable files that the
snapshot does not have; protected files are never touched. Nothing here uses git, so a user's
own repository is left alone.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.workspace import CANDIDATE_DIR, TESTS_DIR, Workspace

MAX_LABEL = 200


@dataclass
class Snapshot:
    snapshot_id: int
    label: str
    created: str
    files: dict[str, str]


def take(workspace: Workspace, label: str) -> Snapshot:
    """Record the current editable files; the caller holds the workspace lock."""
    label = (label or "").strip()
    if not label:
        raise ToolError("snapshot label is empty; give a short label that says what this state is, e.g. 'tests for tier rules'.")
    if len(label) > MAX_LABEL:
        raise ToolError(f"snapshot label is {len(label)} characters; keep it under {MAX_LABEL}.")
    files: dict[str, str] = {}
    for rel, path in workspace.editable_files().items():
        files[rel] = _store_blob(workspace, path.read_bytes())
    snapshot = Snapshot(
        snapshot_id=_next_id(workspace),
        label=label,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        files=files,
    )
    directory = _snapshots_dir(workspace)
    directory.mkdir(parents=True, exist_ok=True)
    _atomic_write(directory / f"{snapshot.snapshot_id}.json", json.dumps(snapshot.__dict__, indent=2, sort_keys=True).encode())
    return snapshot


def all_snapshots(workspace: Workspace) -> list[Snapshot]:
    directory = _snapshots_dir(workspace)
    if not directory.is_dir():
        return []
    snapshots = []
    for path in directory.glob("*.json"):
        if path.stem.isdigit():
            snapshots.append(_read_manifest(path))
    return sorted(snapshots, key=lambda s: s.snapshot_id)


def load(workspace: Workspace, snapshot_id: int) -> Snapshot:
    path = _snapshots_dir(workspace) / f"{snapshot_id}.json"
    if not isinstance(snapshot_id, int) or snapshot_id < 0 or not path.is_file():
        known = [s.snapshot_id for s in all_snapshots(workspace)]
        raise ToolError(f"unknown snapshot_id {snapshot_id!r}; this workspace has snapshots {known}. Call list_snapshots to see them.")
    return _read_manifest(path)


def read_blob(workspace: Workspace, digest: str) -> bytes:
    path = _blob_path(workspace, digest)
    try:
        data = path.read_bytes()
    except OSError:
        data = None
    if data is None or hashlib.sha256(data).hexdigest() != digest:
        raise ToolError(
            f"the snapshot store is damaged (object {digest[:12]} is missing or altered under .aether/objects); "
            "snapshots that need it cannot be restored. Take a new snapshot of the current files."
        )
    return data


def current_files(workspace: Workspace) -> dict[str, str]:
    """The editable files now, by SHA-256 (without storing them)."""
    return {rel: hashlib.sha256(path.read_bytes()).hexdigest() for rel, path in workspace.editable_files().items()}


def restore(workspace: Workspace, snapshot: Snapshot, only: Callable[[str], bool] | None = None) -> tuple[list[str], list[str]]:
    """Make the editable files (those `only` selects by relative path, if given) equal to `snapshot`.

    Returns (written, deleted). Caller holds the lock.
    """
    inside = only or (lambda rel: True)
    contents = {rel: read_blob(workspace, digest) for rel, digest in snapshot.files.items() if inside(rel)}  # verify all first
    now = {rel: digest for rel, digest in current_files(workspace).items() if inside(rel)}
    written, deleted = [], []
    for rel in sorted(set(now) - set(contents)):
        (workspace.path / rel).unlink()
        deleted.append(rel)
    for rel, data in sorted(contents.items()):
        if now.get(rel) == snapshot.files[rel]:
            continue
        target = workspace.resolve(rel, what="snapshot file")
        if workspace.protection_reason(workspace.relative(target)) is not None:
            continue  # a snapshot never carries protected files; never write one even if it claims to
        if target.is_symlink():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(target, data)
        written.append(rel)
    _prune_empty_dirs(workspace)
    return written, deleted


def _prune_empty_dirs(workspace: Workspace) -> None:
    """Remove editable folders left empty by a restore (tests/ and candidate/ always stay)."""
    keep = {TESTS_DIR, CANDIDATE_DIR}
    for directory, _dirnames, _filenames in os.walk(workspace.path, topdown=False):
        path = Path(directory)
        if path == workspace.path:
            continue
        rel = workspace.relative(path)
        if workspace.protection_reason(rel) is not None or rel.as_posix() in keep:
            continue
        if not any(path.iterdir()):
            path.rmdir()


def _store_blob(workspace: Workspace, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    path = _blob_path(workspace, digest)
    if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, data)
    return digest


def _blob_path(workspace: Workspace, digest: str) -> Path:
    return workspace.state_dir / "objects" / digest[:2] / digest


def _snapshots_dir(workspace: Workspace) -> Path:
    return workspace.state_dir / "snapshots"


def _next_id(workspace: Workspace) -> int:
    existing = all_snapshots(workspace)
    return existing[-1].snapshot_id + 1 if existing else 0


def _read_manifest(path: Path) -> Snapshot:
    try:
        data = json.loads(path.read_text())
        return Snapshot(int(data["snapshot_id"]), str(data["label"]), str(data["created"]), dict(data["files"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ToolError(f"snapshot manifest {path.name} under .aether/snapshots is unreadable ({exc}); take a new snapshot.") from exc


def _atomic_write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.write_bytes(data)
    os.replace(temporary, path)
