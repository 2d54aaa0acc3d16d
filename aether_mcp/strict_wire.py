"""What the server publishes and how it answers, tightened for MCP hosts.

- Arguments: an unknown argument is refused (`additionalProperties: false` in the schema and
  `extra="forbid"` in the model that validates calls), so a misspelt option never passes silently.
- Schemas: pydantic's generated `title` keys repeat each property's name; they are dropped. Result
  schemas (each tool's structured result, with every field described) are served as the resource
  aether://schemas/{tool} instead of in `tools/list`, which keeps the list an agent loads before
  its first call under 40 KB; results are still checked against them before they leave.
- Results: the text mirror of a structured result is compact JSON, not indented, followed by a
  resource_link for each artifact the result names that the server serves as a resource.
- Protocol errors: an unknown tool, or a prompt called without a required argument, is a JSON-RPC
  error with code -32602 (invalid params), without a traceback on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, GetPromptRequestParams, ListToolsResult, PaginatedRequestParams, ResourceLink, TextContent
from pydantic import ConfigDict, ValidationError

from aether_mcp.paging import MESSAGE_BYTES, compact_json


def _rewrite(schema: Any, on_property: Callable[[str, dict[str, Any]], dict[str, Any]] = lambda name, sub: sub) -> Any:
    """`schema` without pydantic's generated `title` keys (a property named `title` is kept), each
    property's schema passed through `on_property(name, sub)` at every depth."""
    if isinstance(schema, list):
        return [_rewrite(item, on_property) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            kept[key] = {name: on_property(name, _rewrite(sub, on_property)) for name, sub in value.items()}
        elif key == "$defs" and isinstance(value, dict):
            kept[key] = {name: _rewrite(sub, on_property) for name, sub in value.items()}
        else:
            kept[key] = _rewrite(value, on_property)
    return kept


def compact_schema(schema: Any) -> Any:
    """The schema without pydantic's generated `title` keys."""
    return _rewrite(schema)


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional argument whose default is null, published as its non-null type: leaving it out means the default.

    `{"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}` becomes `{"type": "string"}`; a single
    `type` per property is what hosts that map schemas onto narrower dialects accept, and the tool still takes an
    explicit null.
    """
    options = schema.get("anyOf")
    if schema.get("default", 0) is not None or not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    other = options[0] if options[1] == {"type": "null"} else options[1]
    merged = {key: value for key, value in schema.items() if key not in ("anyOf", "default")}
    return {**other, **merged}


def _published_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    properties = {name: _optional(sub) for name, sub in schema.get("properties", {}).items()}
    return {**schema, "properties": properties, "additionalProperties": False}


class _CompactResults(FuncMetadata):
    result_links: ClassVar[Callable[[dict[str, Any]], list[ResourceLink]] | None] = None

    def convert_result(self, result: Any) -> Any:
        converted = super().convert_result(result)
        if isinstance(converted, CallToolResult) and converted.structured_content is not None and not converted.is_error:
            text = TextContent(type="text", text=compact_json(converted.structured_content))
            links = type(self).result_links
            converted.content = [text, *(links(converted.structured_content) if links is not None else [])]
        return converted


def _refusing_extras(model: type) -> type:
    return type(model.__name__, (model,), {"model_config": ConfigDict(**{**model.model_config, "extra": "forbid"}), "__module__": model.__module__})


def argument_errors(tool: Any, error: ValidationError) -> str:
    """One line per wrong argument, naming it, what was wrong and what was given; then what the tool takes."""
    problems = []
    errors = error.errors()
    for item in errors[:10]:
        where = (".".join(str(part) for part in item["loc"]) or "(arguments)")[:100]
        if item["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument")
        elif item["type"] == "missing":
            problems.append(f"{where}: required")
        else:
            given = json.dumps(item.get("input"), default=str)
            problems.append(f"{where}: {item['msg']} (given {given[:80]})")
    if len(errors) > 10:
        problems.append(f"and {len(errors) - 10:,} more")
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    takes = ", ".join(name if name in required else f"{name}?" for name in properties)
    return f"{tool.name} refused its arguments: {'; '.join(problems)}. It takes: {takes} (? optional; types and ranges in its inputSchema)."


# Result fields that differ between two identical calls: how long it took, and which run it was.
# The result schemas mark them ("x-varies"), so a client comparing two results knows what to ignore.
VARYING_FIELDS = {"duration_s": "timing", "elapsed_s": "timing", "run_id": "run", "log_path": "run", "report_path": "run", "record_path": "run"}


def _mark_varying(name: str, sub: dict[str, Any]) -> dict[str, Any]:
    return {**sub, "x-varies": VARYING_FIELDS[name]} if name in VARYING_FIELDS and isinstance(sub, dict) else sub


def result_schema(server: MCPServer, name: str) -> dict[str, Any] | None:
    """The JSON schema of tool `name`'s structured result (fields that vary between identical calls marked `x-varies`), or None."""
    tool = server._tool_manager.get_tool(name)
    return None if tool is None else _rewrite(tool.fn_metadata.output_schema, _mark_varying)


ERROR_CHARS = 4_000  # an error text longer than this is clipped
ENVELOPE_BYTES = 200  # the JSON-RPC envelope around a result, with room to spare


def _encoded(result: CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _paths(value: Any, found: list[str]) -> list[str]:
    """The values of fields named *_path (the records a result names), at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("_path") and isinstance(item, str):
                found.append(item)
            else:
                _paths(item, found)
    elif isinstance(value, list):
        for item in value:
            _paths(item, found)
    return found


def bounded(result: Any, tool: str) -> Any:
    """`result`, kept under paging.MESSAGE_BYTES as encoded on the wire whatever a tool returned.

    Every tool bounds its own result; this is the backstop. An error text is clipped. A result too
    large with its text mirror gets a short text block instead (the structured content stays
    whole); one too large even so becomes an error that names the records holding it all.
    """
    limit = MESSAGE_BYTES - ENVELOPE_BYTES
    if not isinstance(result, CallToolResult) or _encoded(result) <= limit:
        return result
    size = _encoded(result)
    if result.is_error or result.structured_content is None:
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        clipped = text[:ERROR_CHARS] + (f" [{len(text) - ERROR_CHARS:,} more characters left out]" if len(text) > ERROR_CHARS else "")
        return CallToolResult(content=[TextContent(type="text", text=clipped)], is_error=result.is_error)
    structured = result.structured_content
    sizes = sorted(((len(compact_json(value).encode()), key) for key, value in structured.items()), reverse=True)[:3]
    largest = ", ".join(f"{key} ({count:,} bytes)" for count, key in sizes)
    summary = TextContent(
        type="text",
        text=f"{tool}'s result is {size:,} bytes with its text copy, over the {MESSAGE_BYTES:,} a message may carry, so this text is a summary; "
        f"the structured content holds the whole result. Its largest fields: {largest}.",
    )
    slim = result.model_copy(update={"content": [summary, *(block for block in result.content if not isinstance(block, TextContent))]})
    if _encoded(slim) <= limit:
        return slim
    records = _paths(structured, [])[:5]
    where = f" Its records: {', '.join(records)} (read them with read_file)." if records else ""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{tool}'s result was {size:,} bytes as encoded, over the {MESSAGE_BYTES:,} a message may carry; its largest fields: {largest}.{where} Narrow the call (a path, an offset, fewer rows) and call it again.")],
        is_error=True,
    )


def tighten(server: MCPServer, links: Callable[[dict[str, Any]], list[ResourceLink]] | None = None) -> None:
    """Apply the rules above to every tool and prompt registered on `server` so far; `links(structured)`
    gives the resource_links a result's content carries after its JSON text."""
    results = type("LinkedResults", (_CompactResults,), {"result_links": staticmethod(links)}) if links is not None else _CompactResults
    for tool in server._tool_manager.list_tools():
        metadata = tool.fn_metadata
        tool.fn_metadata = results(
            arg_model=_refusing_extras(metadata.arg_model),
            output_schema=compact_schema(metadata.output_schema) if metadata.output_schema is not None else None,
            output_model=metadata.output_model,
            wrap_output=metadata.wrap_output,
        )
        tool.parameters = _published_arguments(compact_schema(tool.parameters))
        tool.__dict__.pop("output_schema", None)  # a cached copy of the old schema
    lowlevel = server._lowlevel_server
    call_tool = server._handle_call_tool
    get_prompt = server._handle_get_prompt

    async def checked_call_tool(ctx: Any, params: CallToolRequestParams) -> Any:
        if server._tool_manager.get_tool(params.name) is None:
            names = ", ".join(tool.name for tool in server._tool_manager.list_tools())
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool {params.name[:100]!r}. The tools are: {names}.")
        tool = server._tool_manager.get_tool(params.name)
        try:
            tool.fn_metadata.validate_arguments(params.arguments or {})
        except ValidationError as exc:  # the caller's mistake: a tool error it can read and correct
            return CallToolResult(content=[TextContent(type="text", text=argument_errors(tool, exc))], is_error=True)
        return bounded(await call_tool(ctx, params), params.name)

    async def checked_get_prompt(ctx: Any, params: GetPromptRequestParams) -> Any:
        prompt = server._prompt_manager.get_prompt(params.name)
        if prompt is None:
            names = ", ".join(p.name for p in server._prompt_manager.list_prompts())
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt {params.name[:100]!r}. The prompts are: {names}.")
        given = params.arguments or {}
        missing = [argument.name for argument in prompt.arguments or [] if argument.required and argument.name not in given]
        unknown = [name[:100] for name in sorted(set(given) - {argument.name for argument in prompt.arguments or []})[:10]]
        if missing or unknown:
            expected = ", ".join(f"{a.name}{'' if a.required else ' (optional)'}" for a in prompt.arguments or [])
            said = "; ".join(part for part in (f"missing {', '.join(missing)}" if missing else "", f"unknown {', '.join(unknown)}" if unknown else "") if part)
            raise MCPError(code=INVALID_PARAMS, message=f"Prompt {params.name!r}: {said}. It takes: {expected}.")
        return await get_prompt(ctx, params)

    async def listed_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=[tool.model_copy(update={"output_schema": None}) for tool in await server.list_tools()])

    lowlevel.add_request_handler("tools/list", PaginatedRequestParams, listed_tools)
    lowlevel.add_request_handler("tools/call", CallToolRequestParams, checked_call_tool)
    lowlevel.add_request_handler("prompts/get", GetPromptRequestParams, checked_get_prompt)
