"""The path guard: every path a client names must stay inside the server root."""

import os
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.path_guard import SandboxRoot


@pytest.fixture
def sandbox(tmp_path: Path) -> SandboxRoot:
    (tmp_path / "proj" / "jobs").mkdir(parents=True)
    (tmp_path / "proj" / "jobs" / "a.py").write_text("x = 1\n")
    (tmp_path / "proj-evil").mkdir()
    (tmp_path / "proj-evil" / "b.py").write_text("y = 2\n")
    (tmp_path / "outside.py").write_text("z = 3\n")
    return SandboxRoot(tmp_path / "proj")


def test_relative_and_absolute_paths_inside_the_root_resolve(sandbox):
    assert sandbox.resolve("jobs/a.py") == sandbox.path / "jobs" / "a.py"
    assert sandbox.resolve(str(sandbox.path / "jobs" / "a.py")) == sandbox.path / "jobs" / "a.py"


def test_parent_steps_are_refused_even_when_they_land_inside(sandbox):
    with pytest.raises(ToolError, match=r"contains '\.\.'"):
        sandbox.resolve("jobs/../jobs/a.py")
    with pytest.raises(ToolError, match=r"contains '\.\.'"):
        sandbox.resolve("../outside.py")


def test_absolute_path_outside_the_root_is_refused(sandbox, tmp_path):
    with pytest.raises(ToolError, match="outside the server root"):
        sandbox.resolve(str(tmp_path / "outside.py"))
    with pytest.raises(ToolError, match="outside the server root"):
        sandbox.resolve("/etc/passwd")


def test_sibling_directory_sharing_the_roots_prefix_is_outside(sandbox, tmp_path):
    with pytest.raises(ToolError, match="outside the server root"):
        sandbox.resolve(str(tmp_path / "proj-evil" / "b.py"))


def test_nul_byte_is_refused(sandbox):
    with pytest.raises(ToolError, match="NUL byte"):
        sandbox.resolve("jobs/a.py\x00.txt")


def test_symlink_leading_out_is_refused(sandbox, tmp_path):
    os.symlink(tmp_path / "outside.py", sandbox.path / "jobs" / "link.py")
    os.symlink(tmp_path / "proj-evil", sandbox.path / "evil_dir")
    with pytest.raises(ToolError, match="symlink that leads outside"):
        sandbox.resolve("jobs/link.py")
    with pytest.raises(ToolError, match="symlink that leads outside"):
        sandbox.resolve("evil_dir/b.py")


def test_symlink_inside_the_root_is_followed(sandbox):
    os.symlink(sandbox.path / "jobs" / "a.py", sandbox.path / "alias.py")
    assert sandbox.resolve("alias.py") == sandbox.path / "jobs" / "a.py"


def test_empty_path_is_refused(sandbox):
    with pytest.raises(ToolError, match="is empty"):
        sandbox.resolve("  ")
