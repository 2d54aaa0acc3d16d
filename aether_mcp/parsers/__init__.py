"""Pure parsers of tool output read in the server (nsys reports)."""
