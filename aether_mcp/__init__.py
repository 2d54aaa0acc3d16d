"""aether-mcp: an MCP server that converts PySpark Python UDFs into fast, verified equivalents."""

__version__ = "0.1.0"
