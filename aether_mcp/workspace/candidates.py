"""Candidate files of a workspace: their names, and what they declare, read without running them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.workspace import CANDIDATE_DIR, Workspace

CANDIDATE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CANDIDATE_TARGETS = ("sql", "vectorized", "kernel")


class BadCandidate(ValueError):
    """A candidate file that does not follow the contract (unparsable, no literal TARGET)."""


def candidate_names(workspace: Workspace) -> list[str]:
    directory = workspace.path / CANDIDATE_DIR
    return sorted(p.stem for p in directory.glob("*.py")) if directory.is_dir() else []


def candidate_modules(workspace: Workspace) -> list[str]:
    """What a candidate can import from its own folder: candidate/<name>.py and packages candidate/<name>/__init__.py."""
    directory = workspace.path / CANDIDATE_DIR
    if not directory.is_dir():
        return []
    return sorted({p.stem for p in directory.glob("*.py")} | {p.parent.name for p in directory.glob("*/__init__.py")})


def check_target(workspace: Workspace, target: str) -> str:
    """`target` normalised ('original' or 'candidate:<name>' of an existing file), or a ToolError."""
    target = (target or "").strip()
    if target == "original":
        return target
    if target.startswith("candidate:"):
        name = target.removeprefix("candidate:")
        if not CANDIDATE_NAME.match(name):
            raise ToolError(f"candidate name {name!r} is not a Python module name; use letters, digits and _ (file candidate/<name>.py).")
        available = candidate_names(workspace)
        if name in available:
            return target
        listing = ", ".join(f"candidate:{n}" for n in available) or "none yet (write candidate/<name>.py first)"
        raise ToolError(f"candidate/{name}.py does not exist. Candidates in this workspace: {listing}.")
    raise ToolError(f"target {target!r} is not 'original' or 'candidate:<name>'.")


def candidate_path(workspace: Workspace, target: str) -> Path:
    return workspace.path / CANDIDATE_DIR / f"{target.removeprefix('candidate:')}.py"


def declared_target(source: str, name: str) -> str:
    """TARGET read from the source without running it; it must be a string literal."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise BadCandidate(f"candidate/{name}.py has a syntax error at line {exc.lineno}: {exc.msg}") from exc
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TARGET" for t in statement.targets):
            value = statement.value
            if isinstance(value, ast.Constant) and value.value in CANDIDATE_TARGETS:
                return str(value.value)
            break
    raise BadCandidate(f"candidate/{name}.py must set TARGET to one of {', '.join(CANDIDATE_TARGETS)} as a string literal")


def defines_function(source: str, function: str) -> bool:
    return any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == function for s in ast.parse(source).body)
