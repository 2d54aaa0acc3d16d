"""Pages of long text, so that no result a host shows the agent runs past its limits.

A page is at most `PAGE_CHARS` characters and ends at a line end when the page holds one; the next
page starts where it stopped (`next_offset`), so reading page after page returns the text exactly.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

PAGE_CHARS = 40_000  # about 10k tokens: under the size at which MCP hosts warn about a tool result


class Page(BaseModel):
    offset: int = Field(description="character offset of this page in the whole text")
    next_offset: int | None = Field(description="offset of the next page; null: this page ends the text")
    total_chars: int
    more: str | None = Field(description="how to read the rest; null when nothing is left")


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


def page_info(text: str, offset: int, next_offset: int | None, again: str) -> Page:
    """`again` is the call to repeat, with `{offset}` where the next offset goes."""
    more = None
    if next_offset is not None:
        more = f"{len(text) - next_offset:,} more characters; call {again.format(offset=next_offset)} for the next page."
    return Page(offset=offset, next_offset=next_offset, total_chars=len(text), more=more)
