"""Pages of long text, so that no result a host shows the agent runs past its limits.

A page is at most `PAGE_CHARS` characters and ends at a line end when the page holds one; the next
page starts where it stopped (`next_offset`), so reading page after page returns the text exactly.
"""

from __future__ import annotations

PAGE_CHARS = 40_000  # about 10k tokens: under the size at which MCP hosts warn about a tool result


def cut(text: str, offset: int, limit: int = PAGE_CHARS) -> tuple[str, int | None]:
    """The page of `text` starting at `offset`, and the next page's offset (None at the end)."""
    if offset >= len(text):
        return "", None
    end = offset + limit
    if end >= len(text):
        return text[offset:], None
    line_end = text.rfind("\n", offset, end)
    if line_end >= offset:
        end = line_end + 1
    return text[offset:end], end


def more_line(left: int, unit: str, next_offset: int | None, again: str) -> str | None:
    """What a result says while more follows: `left` more `unit`, and `again` (the call to repeat, with
    `{offset}` where the next offset goes); None at the end."""
    if next_offset is None:
        return None
    return f"{left:,} more {unit}; call {again.format(offset=next_offset)} for the next page."
