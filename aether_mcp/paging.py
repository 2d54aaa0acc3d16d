"""Pages of long text and bounded lists, so that no message a host receives runs past its limits.

What a client receives is JSON: a character of a tool result's text costs its JSON escape in the
structured content plus the escape of that escape in the text mirror (a quote costs 2 + 4 bytes, a
control character 6 + 7, an emoji 4 + 4). A page is cut to `PAGE_BYTES` of that encoded size, so a
page of quotes, backslashes, control characters or emoji stays as small on the wire as a page of
plain text (`PAGE_BYTES / 2` characters). A page ends at a line end when it holds one; the next page
starts where it stopped (`next_offset`), so reading page after page returns the text exactly.

Lists in results keep at most `LIST_ITEMS` items within `LIST_BYTES` and count what they leave out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic_core import to_jsonable_python

MESSAGE_BYTES = 80_000  # no message a tool or resource sends is longer, as encoded on the wire
PAGE_BYTES = 60_000  # one page of text, as encoded: 30,000 characters of plain text in a tool result
LIST_ITEMS = 100
LIST_BYTES = 12_000  # the lists beside a page, or one list of a result, as encoded (both copies)
PAGE_TEXT = "at most 60,000 bytes as sent (30,000 characters of plain text, fewer of quotes, backslashes or emoji)"
ABRIDGED_BYTES = 400  # an echoed argument longer than this is described instead

T = TypeVar("T")


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _escape(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


_ASCII_ONCE = [len(_escape(chr(code))) for code in range(128)]
_ASCII_TWICE = [len(_escape(chr(code))) + len(_escape(_escape(chr(code)))) for code in range(128)]


def char_bytes(char: str, mirrored: bool = True) -> int:
    """What one character of a string costs on the wire: in a tool result (`mirrored`, twice) or a resource (once)."""
    code = ord(char)
    if code < 128:
        return (_ASCII_TWICE if mirrored else _ASCII_ONCE)[code]
    width = len(char.encode("utf-8", errors="surrogatepass"))
    return 2 * width if mirrored else width


def wire_bytes(value: Any) -> int:
    """What `value` costs in a tool result as encoded: its JSON in the structured content plus that JSON escaped in the text mirror."""
    once = compact_json(value)
    return len(once.encode("utf-8", errors="surrogatepass")) + len(_escape(once).encode("utf-8", errors="surrogatepass"))


def cut(text: str, offset: int, budget: int = PAGE_BYTES, *, mirrored: bool = True) -> tuple[str, int | None]:
    """The page of `text` starting at `offset` that costs at most `budget` bytes on the wire, and the next page's offset (None at the end)."""
    if offset >= len(text):
        return "", None
    window = text[offset : offset + budget]  # every character costs at least one byte
    spent, end = (wire_bytes("") if mirrored else 2), offset  # the quotes around it count too
    for char in window:
        spent += char_bytes(char, mirrored)
        if spent > budget:
            break
        end += 1
    else:
        if end >= len(text):
            return text[offset:], None
    end = max(end, offset + 1)  # a page always moves on
    line_end = text.rfind("\n", offset, end)
    if line_end >= offset:
        end = line_end + 1
    return text[offset:end], end


SHOWN_BYTES = 800  # a value shown in a result (a row's argument, an output, an error), as sent (both copies)


def clip(text: str, budget: int = SHOWN_BYTES) -> str:
    """`text`, or its start that costs at most `budget` bytes as sent, with how much was left out."""
    if wire_bytes(text) <= budget:
        return text
    spent, end = 60, 0  # room for the note on what was left out
    for char in text:
        spent += char_bytes(char)
        if spent > budget:
            break
        end += 1
    return f"{text[:end]}… [{len(text) - end:,} more characters]"


def clipped(value: Any, budget: int = SHOWN_BYTES) -> Any:
    """`value` (JSON data) with every string longer than `budget` bytes as sent clipped."""
    if isinstance(value, str):
        return clip(value, budget)
    if isinstance(value, list):
        return [clipped(item, budget) for item in value]
    if isinstance(value, dict):
        return {key: clipped(item, budget) for key, item in value.items()}
    return value


def clip_fields(value: Any, names: frozenset[str], budget: int = SHOWN_BYTES) -> Any:
    """`value` (JSON data) with the strings under keys in `names`, at any depth, clipped to `budget` bytes as sent."""
    if isinstance(value, list):
        return [clip_fields(item, names, budget) for item in value]
    if isinstance(value, dict):
        return {
            key: clipped(item, budget) if key in names and not isinstance(item, dict) else clip_fields(item, names, budget) for key, item in value.items()
        }
    return value


def chars_per_page(mirrored: bool = True) -> int:
    """How many characters of plain text a page holds."""
    return (PAGE_BYTES - (wire_bytes("") if mirrored else 2)) // char_bytes("a", mirrored)


def fit(items: Sequence[T], limit: int = LIST_ITEMS, budget: int = LIST_BYTES) -> tuple[list[T], int]:
    """The first items of `items`, at most `limit` of them and `budget` bytes on the wire, and how many were left out."""
    kept: list[T] = []
    spent = 0
    for item in items[:limit]:
        spent += wire_bytes(to_jsonable_python(item)) + 2
        if spent > budget:
            break
        kept.append(item)
    return kept, len(items) - len(kept)


def fit_dict(items: dict[str, T], budget: int = LIST_BYTES) -> tuple[dict[str, T], int]:
    """The first entries of `items` within `budget` bytes as sent (each shown value clipped), and how many were left out."""
    kept, left_out = fit([(key, clipped(value)) for key, value in items.items()], budget=budget)
    return dict(kept), left_out


def list_page(items: Sequence[T], offset: int, limit: int, budget: int = PAGE_BYTES) -> tuple[list[T], int | None]:
    """The page of `items` from `offset`: at most `limit` items and `budget` bytes on the wire (at least one), and the next page's offset."""
    page, _ = fit(items[offset:], limit, budget)
    page = page or list(items[offset : offset + 1])
    end = offset + len(page)
    return page, (end if end < len(items) else None)


def abridged(value: dict[str, Any], limit: int = ABRIDGED_BYTES) -> dict[str, Any]:
    """`value` with each entry longer than `limit` bytes on the wire replaced by a line that says what it was."""
    shown: dict[str, Any] = {}
    for key, item in value.items():
        size = wire_bytes(item)
        if size <= limit:
            shown[key] = item
        else:
            count = f"{len(item):,} items, " if isinstance(item, list | dict) else f"{len(item):,} characters, " if isinstance(item, str) else ""
            shown[key] = f"[{type(item).__name__}: {count}{size:,} bytes as sent; left out here]"
    return shown


def more_line(left: int, unit: str, next_offset: int | None, again: str) -> str | None:
    """What a result says while more follows: `left` more `unit`, and `again` (the call to repeat, with
    `{offset}` where the next offset goes); None at the end."""
    if next_offset is None:
        return None
    return f"{left:,} more {unit}; call {again.format(offset=next_offset)} for the next page."
