"""Big artifacts (run logs, benchmark records and charts, profiles, the report) as resources.

A tool result names its artifacts by path; besides the path, the result's content carries a
`resource_link` for each one a client can read, so a host can open a full log or chart on demand
instead of the agent pasting it into the conversation:

- `aether://workspaces/{name}/file/{+path}{?offset}`: a text artifact, one page (at most 60,000
  bytes as sent, whole lines) from `offset`; while more follows the page ends with a line
  `[N more characters: read <uri>?offset=K]`.
- `aether://workspaces/{name}/chart/{+path}`: a PNG chart.

`name` is the workspace's folder under aether_workspaces/ (else its path under the server root,
percent-encoded); `path` is relative to the workspace and must lie in the server state read_file
may read (`.aether/runs`, `report`, `bench`, `profiles`).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ResourceLink

from aether_mcp import paging
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import files
from aether_mcp.tools.workspaces import DEFAULT_WORKSPACES_DIR, open_named
from aether_mcp.workspace import CONFIG_FILE, STATE_DIR, Workspace

FILE_TEMPLATE = "aether://workspaces/{name}/file/{+path}{?offset}"
CHART_TEMPLATE = "aether://workspaces/{name}/chart/{+path}"
MAX_CHART_BYTES = 56_000  # as base64 in one message, under paging.MESSAGE_BYTES (the charts drawn here are about 45 KB)
TEXT_SUFFIXES = {".log", ".txt", ".json", ".jsonl", ".md", ".csv", ".xml", ".py"}
MIME = {".json": "application/json", ".jsonl": "application/jsonl", ".md": "text/markdown", ".csv": "text/csv", ".png": "image/png"}


def workspace_name(root: SandboxRoot, workspace: Path) -> str:
    """The name open_named finds `workspace` by, percent-encoded for a URI."""
    folder = root.path / DEFAULT_WORKSPACES_DIR
    relative = workspace.relative_to(folder) if workspace.is_relative_to(folder) else workspace.relative_to(root.path)
    return quote(relative.as_posix(), safe="")


def _readable(relative: PurePosixPath) -> bool:
    parts = relative.parts
    return len(parts) >= 3 and parts[0] == STATE_DIR and parts[1] in files.READABLE_STATE


def link(root: SandboxRoot, label: str, value: str) -> ResourceLink | None:
    """A resource_link for the artifact at absolute path `value`, or None when no resource serves it."""
    path = Path(value)
    if not path.is_absolute() or STATE_DIR not in path.parts or not path.is_file():
        return None
    index = len(path.parts) - 1 - path.parts[::-1].index(STATE_DIR)
    workspace = Path(*path.parts[:index])
    if not workspace.is_relative_to(root.path) or not (workspace / CONFIG_FILE).is_file():
        return None
    relative = PurePosixPath(*path.parts[index:])
    suffix = path.suffix.lower()
    if not _readable(relative) or (suffix not in TEXT_SUFFIXES and suffix != ".png"):
        return None
    kind = "chart" if suffix == ".png" else "file"
    uri = f"aether://workspaces/{workspace_name(root, workspace)}/{kind}/{quote(relative.as_posix(), safe='/')}"
    return ResourceLink(type="resource_link", name=label, uri=uri, mime_type=MIME.get(suffix, "text/plain"), size=path.stat().st_size)


def links(root: SandboxRoot, structured: dict[str, Any]) -> list[ResourceLink]:
    """Links for a result's artifacts: its top-level `*_path` fields and the values of `artifacts`."""
    named: list[tuple[str, Any]] = [(key, value) for key, value in structured.items() if key.endswith("_path")]
    artifacts = structured.get("artifacts")
    if isinstance(artifacts, dict):
        named += [(f"artifacts.{key}", value) for key, value in artifacts.items()]
    found, seen = [], set()
    for label, value in named:
        made = link(root, label, value) if isinstance(value, str) else None
        if made is not None and made.uri not in seen:
            seen.add(made.uri)
            found.append(made)
    return found


def _artifact(root: SandboxRoot, name: str, path: str) -> tuple[Workspace, Path, PurePosixPath]:
    opened = open_named(root, name)
    target = opened.resolve(path, what="path")
    relative = opened.relative(target)
    if not _readable(relative):
        raise ToolError(f"{relative} is not an artifact: these resources serve files under {STATE_DIR}/{{{','.join(files.READABLE_STATE)}}}/; read_file reads the workspace's own files.")
    if not target.is_file():
        raise ToolError(f"{relative} does not exist in workspace {name!r}; the tool result that named it may be from a workspace since reset.")
    return opened, target, relative


def read_text(root: SandboxRoot, name: str, path: str, offset: int = 0) -> str:
    """One page of a text artifact, ending with the line that says how to read the next page while one follows."""
    _opened, target, relative = _artifact(root, name, path)
    data = target.read_bytes()
    if b"\x00" in data[:8192]:
        raise ToolError(f"{relative} is a binary file; only text artifacts and PNG charts are served.")
    text = data.decode("utf-8", errors="replace")
    if not 0 <= offset <= len(text):
        raise ToolError(f"offset {offset} is past the end of {relative} ({len(text)} characters); give 0..{len(text)}.")
    content, next_offset = paging.cut(text, offset, mirrored=False)
    if next_offset is None:
        return content
    uri = f"aether://workspaces/{quote(name, safe='')}/file/{quote(relative.as_posix(), safe='/')}"
    return f"{content}[{len(text) - next_offset:,} more characters: read {uri}?offset={next_offset}]\n"


def read_chart(root: SandboxRoot, name: str, path: str) -> bytes:
    _opened, target, relative = _artifact(root, name, path)
    if target.suffix.lower() != ".png" or target.stat().st_size > MAX_CHART_BYTES:
        raise ToolError(
            f"{relative} is not a chart (a PNG of at most {MAX_CHART_BYTES:,} bytes, which fits one message); "
            "read text artifacts as aether://workspaces/{name}/file/{path}, and a larger image from the workspace folder itself."
        )
    return target.read_bytes()

