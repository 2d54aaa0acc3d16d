"""The MCP registrations of the tools, one module per family, each binding the plain functions of
`aether_mcp.tools` to one server root and one worker pool (aether_mcp.server calls them in `tools/list` order)."""
