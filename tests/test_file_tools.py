"""read_file, write_file, list_files: confined to the workspace, protected files never written."""

import os
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import files


def test_write_then_read_round_trips_and_creates_folders(root, workspace):
    written = files.write_file(root, workspace, "candidate/fast.py", "TARGET = 'sql'\n# é\n")
    assert written.created and written.bytes_written == len("TARGET = 'sql'\n# é\n".encode())
    read = files.read_file(root, workspace, "candidate/fast.py")
    assert read.content == "TARGET = 'sql'\n# é\n" and not read.protected
    again = files.write_file(root, workspace, str(Path(workspace) / "candidate" / "fast.py"), "TARGET = 'vectorized'\n")
    assert not again.created


def test_protected_files_can_be_read_but_not_written(root, workspace):
    assert files.read_file(root, workspace, "original/udf.py").protected
    for path in ["aether.toml", "original/udf.py", "original/new.py", ".aether/protected.json", "tests/conftest.py", "pytest.ini", "candidate/pyproject.toml"]:
        with pytest.raises(ToolError, match="is protected and cannot be written"):
            files.write_file(root, workspace, path, "x")
    assert "BASE_FEE" in (Path(workspace) / "original" / "udf.py").read_text()


def test_server_state_is_hidden_except_run_logs(root, workspace):
    with pytest.raises(ToolError, match="is server state and cannot be read"):
        files.read_file(root, workspace, ".aether/protected.json")
    run_dir = Path(workspace) / ".aether" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "pytest.log").write_text("log text")
    assert files.read_file(root, workspace, ".aether/runs/r1/pytest.log").content == "log text"
    listed = {e.path for e in files.list_files(root, workspace, ".aether/runs").entries}
    assert listed == {".aether/runs/r1", ".aether/runs/r1/pytest.log"}


@pytest.mark.parametrize("path", ["../jobs/shipping.py", "tests/../../jobs/shipping.py", "/etc/passwd", "tests/a\x00b.py"])
def test_paths_outside_the_workspace_are_refused(root, workspace, path):
    with pytest.raises(ToolError):
        files.read_file(root, workspace, path)
    with pytest.raises(ToolError):
        files.write_file(root, workspace, path, "x")


def test_the_server_root_outside_the_workspace_is_refused(root, workspace):
    with pytest.raises(ToolError, match="outside the workspace"):
        files.read_file(root, workspace, str(root.path / "jobs" / "shipping.py"))


def test_symlinks_are_never_followed_out_or_written_through(root, workspace, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    ws = Path(workspace)
    os.symlink(secret, ws / "tests" / "leak.txt")
    os.symlink(ws / "original" / "udf.py", ws / "tests" / "inner.py")
    with pytest.raises(ToolError, match="symlink that leads outside the workspace"):
        files.read_file(root, workspace, "tests/leak.txt")
    # issue 15: write through the very link that leads out, not just near it
    with pytest.raises(ToolError, match="symlink"):
        files.write_file(root, workspace, "tests/leak.txt", "overwritten")
    with pytest.raises(ToolError, match="is protected"):
        files.write_file(root, workspace, "tests/inner.py", "x")
    os.symlink(ws / "candidate", ws / "alias_dir")
    with pytest.raises(ToolError, match="symlink"):
        files.write_file(root, workspace, "alias_dir/x.py", "x")
    assert secret.read_text() == "secret" and os.path.islink(ws / "tests" / "leak.txt")
    assert "BASE_FEE" in (ws / "original" / "udf.py").read_text()
    entries = {e.path: e.type for e in files.list_files(root, workspace).entries}
    assert entries["tests/leak.txt"] == "symlink" and entries["alias_dir"] == "symlink"


def test_a_symlink_loop_is_refused_and_nothing_hangs(root, workspace):
    ws = Path(workspace)
    os.symlink(ws / "tests" / "b.py", ws / "tests" / "a.py")
    os.symlink(ws / "tests" / "a.py", ws / "tests" / "b.py")
    for call in (lambda: files.read_file(root, workspace, "tests/a.py"), lambda: files.write_file(root, workspace, "tests/a.py", "x")):
        with pytest.raises(ToolError):
            call()
    assert {e.path for e in files.list_files(root, workspace, "tests").entries} >= {"tests/a.py", "tests/b.py"}


def test_a_workspace_argument_outside_the_root_is_refused(root, workspace, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for argument in (str(elsewhere), "../elsewhere", str(root.path) + "/../elsewhere"):
        with pytest.raises(ToolError, match="outside|parent-directory steps are not allowed"):
            files.read_file(root, argument, "aether.toml")
        with pytest.raises(ToolError, match="outside|parent-directory steps are not allowed"):
            files.write_file(root, argument, "tests/x.py", "x")
    assert list(elsewhere.iterdir()) == []


def test_list_files_marks_protection_and_skips_clutter(root, workspace):
    (Path(workspace) / "tests" / "__pycache__").mkdir()
    entries = {e.path: e for e in files.list_files(root, workspace).entries}
    assert entries["original/udf.py"].protected and not entries["tests/cases.py"].protected
    assert entries[".aether"].type == "dir" and not any(p.startswith(".aether/") for p in entries)
    assert "tests/__pycache__" not in entries
    single = files.list_files(root, workspace, "tests/cases.py").entries
    assert [(e.path, e.type) for e in single] == [("tests/cases.py", "file")]


def test_missing_folders_and_binary_and_oversized_content_are_refused(root, workspace):
    with pytest.raises(ToolError, match="does not exist in the workspace. Call list_files"):
        files.read_file(root, workspace, "tests/nope.py")
    with pytest.raises(ToolError, match="is a folder; call list_files"):
        files.read_file(root, workspace, "tests")
    (Path(workspace) / "tests" / "blob.bin").write_bytes(b"\x00\x01")
    with pytest.raises(ToolError, match="binary file"):
        files.read_file(root, workspace, "tests/blob.bin")
    with pytest.raises(ToolError, match="at most 1048576 bytes"):
        files.write_file(root, workspace, "tests/big.py", "x" * (1024 * 1024 + 1))
    with pytest.raises(ToolError, match="is a folder"):
        files.write_file(root, workspace, "tests", "x")
