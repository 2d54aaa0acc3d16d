"""Tool functions, one module per family; each is plain Python, callable without MCP."""
