from aether_mcp.cli import main

main()
