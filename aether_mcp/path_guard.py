"""The one path guard: every path a client names is resolved here and must stay inside the root.

A path may be relative to the root (or to a workspace) or absolute, but once symlinks are
resolved it must lie inside the directory the server was started for. `..` components, NUL
bytes and symlinks that lead out are refused, and a sibling directory that merely shares the
root's name as a prefix (`/data/proj-evil` next to `/data/proj`) is outside.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError


class SandboxRoot:
    """The directory a server was started for; nothing outside it is ever read or written."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise ValueError(f"root {path} is not a directory")
        self.path = path.resolve(strict=True)

    def resolve(self, user_path: str, *, what: str = "path", base: Path | None = None) -> Path:
        """Resolve `user_path` (relative to `base`, default the root) to an absolute path inside the root.

        Raises ToolError naming `what` when the path is malformed or leads outside.
        """
        base = self.path if base is None else base
        return resolve_inside(user_path, base=base, boundary=self.path, what=what, boundary_name="the server root")

    def relative(self, path: Path) -> str:
        """`path` relative to the root, in POSIX form, for messages and config files."""
        return path.relative_to(self.path).as_posix()


def resolve_inside(user_path: str, *, base: Path, boundary: Path, what: str, boundary_name: str) -> Path:
    """Resolve `user_path` against `base`; refuse anything that does not stay inside `boundary`."""
    if not isinstance(user_path, str) or user_path.strip() == "":
        raise ToolError(f"{what} is empty. Give a path inside {boundary_name} ({boundary}).")
    if "\x00" in user_path:
        raise ToolError(f"{what} contains a NUL byte, which no file name can hold. Give a plain path inside {boundary_name}.")
    parts = Path(user_path).parts
    if ".." in parts:
        raise ToolError(
            f"{what} {user_path!r} contains '..'; parent-directory steps are not allowed. "
            f"Give a path inside {boundary_name} ({boundary}) without '..'."
        )
    candidate = Path(user_path) if Path(user_path).is_absolute() else base / user_path
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # symlink loops and the like
        raise ToolError(f"{what} {user_path!r} cannot be resolved ({exc}). Give a plain path inside {boundary_name}.") from exc
    if not resolved.is_relative_to(boundary):
        lexical = Path(os.path.normpath(candidate))
        reason = "is a symlink that leads" if lexical.is_relative_to(boundary) else "is"
        raise ToolError(
            f"{what} {user_path!r} {reason} outside {boundary_name} ({boundary}). "
            f"Only files inside it can be used; copy the file there or restart the server with a wider --root."
        )
    return resolved


ROOT_ENV = "AETHER_MCP_ROOT"  # the server root when `serve` is given no --root


def root_problem(root: str | None) -> str | None:
    """Why `root` cannot be the server root, or None. The root is every file the tools may touch."""
    if not root:
        return (
            f"no root: pass --root <folder> (or set {ROOT_ENV}) with the folder that holds your PySpark jobs, "
            "e.g. aether-mcp serve --root ~/projects/etl. The tools can read and write only inside it."
        )
    path = Path(root).expanduser()
    if not path.is_dir():
        return f"--root {root} is not a directory; give the folder that holds your PySpark jobs."
    resolved = path.resolve()
    if resolved == Path(resolved.anchor):
        return f"--root {root} is the filesystem root; give the folder that holds your PySpark jobs, so the tools cannot reach the rest of the machine."
    if resolved == Path.home().resolve():
        return f"--root {root} is your home folder; give the project folder inside it that holds your PySpark jobs, so the tools cannot reach your other files."
    return None
