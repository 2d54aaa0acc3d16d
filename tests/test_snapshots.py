"""snapshot, revert, list_snapshots, diff: byte-for-byte restores that never touch protected files."""

from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import files, snapshots


def test_revert_restores_bytes_deletes_new_files_and_keeps_a_backup(root, workspace):
    ws = Path(workspace)
    cases_before = (ws / "tests" / "cases.py").read_bytes()
    first = snapshots.snapshot(root, workspace, "five cases")
    files.write_file(root, workspace, "tests/cases.py", "CASES = []\n")
    files.write_file(root, workspace, "candidate/sub/fast.py", "TARGET = 'sql'\n")
    (ws / "tests" / "binary.dat").write_bytes(bytes(range(256)))
    original_before = (ws / "original" / "udf.py").read_bytes()

    reverted = snapshots.revert(root, workspace, first.snapshot_id)
    assert (ws / "tests" / "cases.py").read_bytes() == cases_before
    assert not (ws / "candidate" / "sub").exists()
    assert not (ws / "tests" / "binary.dat").exists()
    assert sorted(reverted.deleted) == ["candidate/sub/fast.py", "tests/binary.dat"]
    assert reverted.restored == ["tests/cases.py"]
    assert (ws / "original" / "udf.py").read_bytes() == original_before

    # Nothing is lost: the replaced state was saved and can be restored in turn.
    snapshots.revert(root, workspace, reverted.backup_snapshot_id)
    assert (ws / "tests" / "binary.dat").read_bytes() == bytes(range(256))
    assert (ws / "candidate" / "sub" / "fast.py").read_text() == "TARGET = 'sql'\n"


def test_revert_to_the_current_state_changes_nothing(root, workspace):
    taken = snapshots.snapshot(root, workspace, "now")
    result = snapshots.revert(root, workspace, taken.snapshot_id)
    assert result.backup_snapshot_id is None and result.restored == [] and result.deleted == []


def test_list_and_diff(root, workspace):
    files.write_file(root, workspace, "candidate/a.py", "x = 1\n")
    one = snapshots.snapshot(root, workspace, "with a")
    files.write_file(root, workspace, "candidate/a.py", "x = 2\n")
    files.write_file(root, workspace, "candidate/b.py", "y = 1\n")
    listed = snapshots.list_snapshots(root, workspace).snapshots
    assert [(s.snapshot_id, s.label) for s in listed] == [(0, "init: empty tests, no candidates"), (one.snapshot_id, "with a")]
    current = snapshots.diff(root, workspace, one.snapshot_id)
    assert current.added == ["candidate/b.py"] and current.modified == ["candidate/a.py"] and current.removed == []
    assert "-x = 1\n+x = 2\n" in current.diff
    two = snapshots.snapshot(root, workspace, "with b")
    between = snapshots.diff(root, workspace, two.snapshot_id, one.snapshot_id)
    assert between.removed == ["candidate/b.py"] and "-y = 1" in between.diff


def test_unknown_snapshot_ids_and_bad_labels_are_refused(root, workspace):
    with pytest.raises(ToolError, match=r"unknown snapshot_id 7; this workspace has snapshots \[0\]"):
        snapshots.revert(root, workspace, 7)
    with pytest.raises(ToolError, match="unknown snapshot_id -1"):
        snapshots.diff(root, workspace, -1)
    with pytest.raises(ToolError, match="label is empty"):
        snapshots.snapshot(root, workspace, "  ")
    with pytest.raises(ToolError, match="keep it under 200"):
        snapshots.snapshot(root, workspace, "x" * 201)


def test_a_damaged_store_is_reported_and_nothing_is_changed(root, workspace):
    ws = Path(workspace)
    taken = snapshots.snapshot(root, workspace, "base")
    files.write_file(root, workspace, "tests/cases.py", "CASES = []\n")
    for blob in (ws / ".aether" / "objects").rglob("*"):
        if blob.is_file():
            blob.write_bytes(b"tampered")
    with pytest.raises(ToolError, match="snapshot store is damaged"):
        snapshots.revert(root, workspace, taken.snapshot_id)
    assert (ws / "tests" / "cases.py").read_text() == "CASES = []\n"


def test_a_snapshot_never_restores_onto_protected_paths(root, workspace):
    # issue 15: a snapshot manifest is a record under .aether/ that a shell could edit to name
    # protected files, or a test file could have become a link into original/ since
    import json
    import os

    from aether_mcp.workspace import Workspace, snapshot_store

    ws = Path(workspace)
    opened = Workspace.open_intact(root, workspace)
    taken = snapshots.snapshot(root, workspace, "cases")
    manifest = ws / ".aether" / "snapshots" / f"{taken.snapshot_id}.json"
    data = json.loads(manifest.read_text())
    blob = data["files"]["tests/cases.py"]
    data["files"].update({"original/udf.py": blob, "aether.toml": blob, ".aether/protected.json": blob, "tests/conftest.py": blob})
    manifest.write_text(json.dumps(data))
    before = {rel: path.read_bytes() for rel, path in opened.protected_files().items()}
    files.write_file(root, workspace, "tests/cases.py", "CASES = []\n")
    os.symlink(ws / "original" / "udf.py", ws / "tests" / "linked.py")
    data["files"]["tests/linked.py"] = blob
    manifest.write_text(json.dumps(data))
    snapshots.revert(root, workspace, taken.snapshot_id)
    assert {rel: path.read_bytes() for rel, path in opened.protected_files().items()} == before
    assert not (ws / "tests" / "conftest.py").exists() and (ws / ".aether" / "protected.json").read_text() != (ws / "tests" / "cases.py").read_text()
    assert Workspace.open_intact(root, workspace).integrity().intact
    assert snapshot_store.load(opened, taken.snapshot_id).files["original/udf.py"] == blob  # the claim is still there, never acted on
