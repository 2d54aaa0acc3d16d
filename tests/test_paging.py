"""Pages and lists bounded by what they cost on the wire, and progress notes that keep coming."""

import json
import threading
import time

import pytest

from aether_mcp import paging
from aether_mcp.progress_report import Monotonic


def _as_sent(page: str) -> int:
    """Bytes of `page` in a result: its JSON in the structured content plus that JSON in the text mirror."""
    once = json.dumps(page, ensure_ascii=False)
    return len(once.encode()) + len(json.dumps(once, ensure_ascii=False).encode()) - 2


@pytest.mark.parametrize("unit", ["x", '"', "\\", "\x01", "\u2028", "😀", 'a"\\\x1f😀é'])
def test_pages_of_any_text_cost_at_most_the_budget_as_sent_and_rejoin_exactly(unit):
    text = "".join(f"{unit * (index % 50)}\n" for index in range(3_000))
    pages, offset = [], 0
    while offset is not None:
        page, offset = paging.cut(text, offset)
        assert _as_sent(page) <= paging.wire_bytes(page) + 2 <= paging.PAGE_BYTES + 2
        assert page.endswith("\n")  # a page holding a line end stops at one
        pages.append(page)
    assert "".join(pages) == text and len(pages) >= 2


def test_a_page_of_plain_text_holds_30000_characters_and_a_resource_page_60000():
    text = "x" * 200_000
    assert len(paging.cut(text, 0)[0]) == paging.chars_per_page() == 29_997  # less the quotes around it
    assert len(paging.cut(text, 0, mirrored=False)[0]) == 59_998
    quotes = '"' * 200_000
    assert len(paging.cut(quotes, 0)[0]) == (paging.PAGE_BYTES - 6) // 6  # 2 bytes in the structure, 4 in the mirror


def test_lists_keep_what_fits_and_count_the_rest():
    paths = [f'tests/data/note_{index:04}_"q"_😀.txt' for index in range(1_500)]
    kept, left_out = paging.fit(paths)
    assert kept == paths[: len(kept)] and len(kept) + left_out == 1_500 and sum(paging.wire_bytes(p) + 2 for p in kept) <= paging.LIST_BYTES
    assert paging.fit(["x" * 100_000]) == ([], 1)  # one item too big for the budget is counted, not shown
    page, next_offset = paging.list_page(["x" * 100_000, "y"], 0, 10)
    assert page == ["x" * 100_000] and next_offset == 1  # a page always moves on
    shown = paging.abridged({"workspace": "ws", "inputs": [["x" * 50]] * 100})
    assert shown["workspace"] == "ws" and shown["inputs"].startswith("[list: 100 items, ") and "left out here" in shown["inputs"]


def test_a_step_that_runs_long_is_repeated_with_its_time_and_counts_still_rise():
    sent = []
    progress = Monotonic(lambda done, total, message: sent.append((time.monotonic(), done, message)))
    stop = threading.Event()
    beat = threading.Thread(target=progress.keep_alive, args=(stop, 0.2))
    beat.start()
    progress(1, 10, "comparing rows")
    time.sleep(0.9)
    progress(2, 10, "auditing")
    time.sleep(0.5)
    stop.set()
    beat.join()
    progress.close()
    progress(3, 10, "after the end")  # nothing follows a closed call's result
    messages = [message for _, _, message in sent]
    assert messages[0] == "comparing rows" and "auditing" in messages and "after the end" not in messages
    assert any(m.startswith("comparing rows (still working: ") for m in messages) and any(m.startswith("auditing (still working: ") for m in messages)
    assert all(later[1] > earlier[1] for earlier, later in zip(sent, sent[1:]))
    assert max(later[0] - earlier[0] for earlier, later in zip(sent, sent[1:])) < 0.8  # without repeats the first step would leave a 0.9 s gap; room for a loaded machine


def test_a_result_too_big_for_one_message_is_summarised_or_refused_never_sent_whole():
    from mcp_types import CallToolResult, TextContent

    from aether_mcp.strict_wire import bounded, compact_json

    def result(structured):
        return CallToolResult(content=[TextContent(type="text", text=compact_json(structured))], structured_content=structured)

    def size(message):
        return len(message.model_dump_json(by_alias=True, exclude_none=True).encode())

    small = result({"rows": ["x" * 100]})
    assert bounded(small, "t") is small
    twice = bounded(result({"rows": ['"' * 14_000], "result_path": "/w/.aether/runs/r/result.json"}), "t")  # fits once, not with its mirror
    assert not twice.is_error and twice.structured_content["rows"] == ['"' * 14_000] and "the structured content holds the whole result" in twice.content[0].text
    huge = bounded(result({"rows": ["x" * 200_000], "result_path": "/w/.aether/runs/r/result.json"}), "t")
    assert huge.is_error and "/w/.aether/runs/r/result.json" in huge.content[0].text and "rows (200,004 bytes)" in huge.content[0].text
    error = bounded(CallToolResult(content=[TextContent(type="text", text="e" * 200_000)], is_error=True), "t")
    assert error.is_error and "more characters left out" in error.content[0].text
    assert all(size(message) <= paging.MESSAGE_BYTES for message in (twice, huge, error))


def test_shown_values_are_clipped_by_field_name_and_a_summary_object_under_such_a_name_is_left_whole():
    data = {"evidence": {"note": "n" * 2_000}, "findings": [{"evidence": '"' * 2_000, "rule": "r"}], "args": ["a" * 2_000, "b"]}
    shown = paging.clip_fields(data, frozenset({"evidence", "args"}))
    assert shown["evidence"]["note"] == "n" * 2_000 and shown["findings"][0]["rule"] == "r" and shown["args"][1] == "b"
    for text in (shown["findings"][0]["evidence"], shown["args"][0]):
        assert paging.wire_bytes(text) <= paging.SHOWN_BYTES + 10 and text.endswith(" more characters]")
