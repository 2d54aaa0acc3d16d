"""What `tools/list` costs a host, and what the result schemas would add to it.

    .venv/bin/python benchmarks/tools_list_size.py

Prints the bytes of `tools/list` as sent, the bytes the result schemas (aether://schemas/{tool})
would add as served, and as compact as they can be made (every description, title and
`x-varies` mark stripped), so the choice to serve them as resources can be checked against
the 60 KB a host loads without cost.
"""

from __future__ import annotations

import json
import tempfile
from typing import Any

import anyio
from mcp import Client

from aether_mcp import strict_wire
from aether_mcp.paging import compact_json
from aether_mcp.server import build_server

STRIPPED = ("description", "title", "x-varies")


def stripped(schema: Any) -> Any:
    """`schema` without descriptions, titles and marks (a property that is named like one is kept)."""
    if isinstance(schema, list):
        return [stripped(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {}
    for key, value in schema.items():
        if key in STRIPPED and isinstance(value, str):
            continue
        kept[key] = {name: stripped(sub) for name, sub in value.items()} if key == "properties" else stripped(value)
    return kept


async def main() -> None:
    server = build_server(tempfile.mkdtemp(), warm_start=False)
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    listed = len(compact_json([tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]).encode())
    schemas = [strict_wire.result_schema(server, tool.name) for tool in tools]
    full = sum(len(compact_json(schema).encode()) for schema in schemas)
    compact = sum(len(compact_json(stripped(schema)).encode()) for schema in schemas)
    print(json.dumps({"tools": len(tools), "tools_list_bytes": listed, "result_schemas_bytes": full, "result_schemas_stripped_bytes": compact, "with_stripped_schemas_bytes": listed + compact}, indent=1))


if __name__ == "__main__":
    anyio.run(main)
