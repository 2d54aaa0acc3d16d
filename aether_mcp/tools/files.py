"""read_file, write_file, list_files: editing a workspace for clients without an editor of their own.

Confined to the workspace; a symlink is never followed out of it and never written through;
protected files can be read but not written; `.aether/` is server state, of which only the
artifacts can be read: run logs and records (`.aether/runs/`), benchmark records and charts
(`.aether/bench/`), profiles (`.aether/profiles/`) and the conversion report (`.aether/report/`).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.workspace import IGNORED_DIR_NAMES, STATE_DIR, Workspace

MAX_WRITE_BYTES = 1024 * 1024
MAX_LIST_ENTRIES = 50_000  # a walk stops counting here
LIST_PAGE = 300  # entries per page at most, and at most paging.PAGE_BYTES as sent
READABLE_STATE = ("runs", "bench", "profiles", "report", "validate")  # artifacts the tool results name


class ReadFileResult(BaseModel):
    path: str
    content: str = Field(description="one page of the file's text, " + paging.PAGE_TEXT + ", ending at a line end")
    size: int = Field(description="size of the file in bytes")
    first_line: int = Field(description="line number (1-based) of the page's first line")
    last_line: int = Field(description="line number of the page's last line")
    total_lines: int
    offset: int = Field(description="character offset of this page in the file's text")
    next_offset: int | None = Field(description="offset of the next page; null: the page ends the file")
    truncated: bool = Field(description="more of the file follows this page")
    more: str | None = Field(description="how to read the rest; null when nothing is left")
    protected: bool


class WriteFileResult(BaseModel):
    path: str
    bytes_written: int
    created: bool


class ListEntry(BaseModel):
    path: str
    type: Literal["file", "dir", "symlink"]
    size: int | None = None
    protected: bool


class ListFilesResult(BaseModel):
    workspace: str
    entries: list[ListEntry] = Field(description="one page of the entries, sorted by path")
    total: int = Field(description="entries under the path (counting stops at 50,000)")
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null: this page ends the list")
    truncated: bool = Field(description="more entries follow this page")
    more: str | None = Field(description="how to list the rest; null when nothing is left")


def read_file(root: SandboxRoot, workspace: str, path: str, offset: int = 0, start_line: int | None = None) -> ReadFileResult:
    """One page of a text file: from character `offset`, or from line `start_line` (1-based) when given."""
    opened = Workspace.open_intact(root, workspace)
    target = opened.resolve(path, what="path")
    relative = opened.relative(target)
    if _is_hidden_state(relative):
        raise ToolError(f"{relative} is server state and cannot be read; only artifacts under {_readable_folders()} can. Use workspace_status for the rest.")
    if not target.exists():
        raise ToolError(f"{relative} does not exist in the workspace. Call list_files to see what is there.")
    if target.is_dir():
        raise ToolError(f"{relative} is a folder; call list_files(workspace, {str(relative)!r}) to see its files.")
    data = target.read_bytes()
    if b"\x00" in data[:8192]:
        raise ToolError(f"{relative} is a binary file; read_file returns text only.")
    text = data.decode("utf-8", errors="replace")
    total_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if start_line is not None:
        if not 1 <= start_line <= max(total_lines, 1):
            raise ToolError(f"start_line {start_line} is past the end of {relative} ({total_lines} lines); give 1..{max(total_lines, 1)}.")
        offset = 0
        for _ in range(start_line - 1):
            offset = text.index("\n", offset) + 1
    if not 0 <= offset <= len(text):
        raise ToolError(f"offset {offset} is past the end of {relative} ({len(text)} characters); give 0..{len(text)}, or a next_offset a page returned.")
    content, next_offset = paging.cut(text, offset)
    first_line = text.count("\n", 0, offset) + 1
    more = paging.more_line(len(text) - (next_offset or 0), "characters", next_offset, f"read_file(workspace, {relative.as_posix()!r}, offset={{offset}})")
    return ReadFileResult(
        path=relative.as_posix(),
        content=content,
        size=len(data),
        first_line=first_line,
        last_line=first_line + max(content.count("\n") - (1 if content.endswith("\n") else 0), 0),
        total_lines=total_lines,
        offset=offset,
        next_offset=next_offset,
        truncated=next_offset is not None,
        more=more,
        protected=opened.protection_reason(relative) is not None,
    )


def write_file(root: SandboxRoot, workspace: str, path: str, content: str) -> WriteFileResult:
    opened = Workspace.open_intact(root, workspace)
    lexical = opened.path / path if not Path(path).is_absolute() else Path(path)
    target = opened.resolve(path, what="path")
    relative = opened.relative(target)
    for candidate in {relative, _lexical_relative(opened, lexical)}:
        reason = opened.protection_reason(candidate) if candidate is not None else None
        if reason:
            raise ToolError(
                f"{candidate} is protected and cannot be written: {reason}. Agent files go under tests/ "
                "(cases.py, test_*.py) and candidate/ (<name>.py)."
            )
    if lexical.is_symlink() or any(parent.is_symlink() for parent in _parents_inside(opened, lexical)):
        raise ToolError(f"{path} is or passes through a symlink; write_file never writes through links. Write a plain file path instead.")
    if target.is_dir():
        raise ToolError(f"{relative} is a folder; give a file path such as {relative}/name.py.")
    data = content.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"content is {len(data)} bytes; write_file accepts at most {MAX_WRITE_BYTES} bytes per file. Split it into smaller modules.")
    created = not target.exists()
    with opened.lock():
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        temporary.write_bytes(data)
        os.replace(temporary, target)
    return WriteFileResult(path=relative.as_posix(), bytes_written=len(data), created=created)


def list_files(root: SandboxRoot, workspace: str, path: str = ".", offset: int = 0) -> ListFilesResult:
    """One page (LIST_PAGE entries, fewer when their paths are long) of what lies under `path`, from entry `offset` of the sorted list."""
    opened = Workspace.open_intact(root, workspace)
    start = opened.resolve(path, what="path")
    if not start.exists():
        raise ToolError(f"{path} does not exist in the workspace; call list_files(workspace) for the whole tree.")
    if _is_hidden_state(opened.relative(start)):
        raise ToolError(f"{opened.relative(start)} is server state and cannot be listed; only {_readable_folders()} can.")
    entries: list[ListEntry] = []
    if start.is_file():
        relative = opened.relative(start)
        entry = ListEntry(path=relative.as_posix(), type="file", size=start.stat().st_size, protected=opened.protection_reason(relative) is not None)
        return ListFilesResult(workspace=str(opened.path), entries=[entry], total=1, offset=0, next_offset=None, truncated=False, more=None)
    for directory, dirnames, filenames in os.walk(start, followlinks=False):
        here = Path(directory)
        rel_dir = opened.relative(here)
        descend = []
        for name in sorted(dirnames):
            rel = rel_dir / name
            if name in IGNORED_DIR_NAMES:
                continue
            protected = opened.protection_reason(rel) is not None
            if (here / name).is_symlink():
                entries.append(ListEntry(path=rel.as_posix(), type="symlink", protected=protected))
                continue
            entries.append(ListEntry(path=rel.as_posix(), type="dir", protected=protected))
            if not _is_hidden_state(rel):  # .aether/ is shown but not opened
                descend.append(name)
        dirnames[:] = descend
        for name in sorted(filenames):
            rel = rel_dir / name
            if _is_hidden_state(rel):
                continue
            full = here / name
            kind: Literal["file", "symlink"] = "symlink" if full.is_symlink() else "file"
            size = None if kind == "symlink" else full.stat().st_size
            entries.append(ListEntry(path=rel.as_posix(), type=kind, size=size, protected=opened.protection_reason(rel) is not None))
        if len(entries) >= MAX_LIST_ENTRIES:
            break
    entries.sort(key=lambda e: e.path)
    if not 0 <= offset <= len(entries):
        raise ToolError(f"offset {offset} is past the end of the list ({len(entries)} entries); give a next_offset a page returned.")
    page, next_offset = paging.list_page(entries, offset, LIST_PAGE)
    more = paging.more_line(len(entries) - (next_offset or 0), "entries", next_offset, f"list_files(workspace, {path!r}, offset={{offset}})")
    return ListFilesResult(
        workspace=str(opened.path), entries=page, total=len(entries), offset=offset, next_offset=next_offset, truncated=next_offset is not None, more=more
    )



def _readable_folders() -> str:
    return ", ".join(f"{STATE_DIR}/{name}/" for name in READABLE_STATE)


def _is_hidden_state(relative: PurePosixPath) -> bool:
    parts = relative.parts
    return bool(parts) and parts[0] == STATE_DIR and not (len(parts) >= 2 and parts[1] in READABLE_STATE)


def _lexical_relative(workspace: Workspace, lexical: Path) -> PurePosixPath | None:
    normal = Path(os.path.normpath(lexical))
    return PurePosixPath(normal.relative_to(workspace.path).as_posix()) if normal.is_relative_to(workspace.path) else None


def _parents_inside(workspace: Workspace, lexical: Path) -> list[Path]:
    normal = Path(os.path.normpath(lexical))
    return [p for p in normal.parents if p.is_relative_to(workspace.path) and p != workspace.path]
