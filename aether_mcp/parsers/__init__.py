"""Pure parsers of tool output read in the server: nsys reports, and device counters from nsys or CUPTI traces."""
