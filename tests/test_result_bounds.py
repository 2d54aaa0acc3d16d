"""Every message a client receives stays under 80,000 bytes as encoded on the wire, however big the
workspace: 1,500 files, 1,000 recorded rows and long strings of quotes, backslashes, control
characters and emoji, each of which JSON makes longer. Lists come in pages or count what they leave out."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mcp import Client

from aether_mcp import paging
from aether_mcp.server import build_server

pytestmark = pytest.mark.anyio

TIDY_JOB = '''from pyspark.sql.functions import udf


@udf("string")
def tidy(text: str) -> str:
    if text is None:
        return None
    if text.startswith('"'):
        return text[1:].replace("\\\\", "/")
    return text.replace("\\\\", "/")
'''
TIDY_SQL = '''TARGET = "sql"

from pyspark.sql import functions as F


def build(text):
    body = F.when(text.startswith('"'), F.substring(text, 2, 1_000_000_000)).otherwise(text)
    return F.translate(body, "\\\\", "/")
'''
TIDY_VECTORIZED = '''TARGET = "vectorized"


def evaluate(text):
    body = text.where(~text.str.startswith('"', na=False), text.str.slice(1))
    return body.str.replace("\\\\", "/", regex=False)
'''
TIDY_WRONG = '''TARGET = "sql"

from pyspark.sql import functions as F


def build(text):
    return F.concat(text, text)
'''
TIDY_RAISING = '''TARGET = "vectorized"


def evaluate(text):
    raise ValueError("\\"" * 100_000)
'''
HEAVY = '"\\\x01\x1f\u2028😀 '  # each costs more as JSON than as text, some of them much more


def _heavy(index: int, length: int) -> str:
    return (f'{chr(34) * (index % 2)}{index}' + HEAVY * (length // len(HEAVY) + 1))[:length]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _encoded(message) -> int:
    """Bytes of a result as a JSON-RPC response on the wire."""
    return len(f'{{"jsonrpc":"2.0","id":1000000,"result":{message.model_dump_json(by_alias=True, exclude_none=True)}}}'.encode())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_no_message_is_over_80k_bytes_on_a_workspace_with_1500_files_1000_rows_and_escape_heavy_strings(tmp_path, workers, mode):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "tidy.py").write_text(TIDY_JOB, encoding="utf-8")
    pq.write_table(pa.table({"text": [_heavy(index, 300) for index in range(200)] + [None]}), tmp_path / "texts.parquet")
    sizes: dict[str, int] = {}
    async with Client(build_server(str(tmp_path), workers=workers, warm_start=False), mode=mode) as client:

        async def call(name, /, **arguments):
            result = await client.call_tool(name, arguments)
            sizes[name] = max(sizes.get(name, 0), _encoded(result))
            assert not result.is_error, (name, result.content[0].text[:2000])
            for link in (block for block in result.content if block.type == "resource_link" and "/file/" in str(block.uri)):
                read = await client.read_resource(str(link.uri))
                sizes["resources"] = max(sizes.get("resources", 0), _encoded(read))
            return result.structured_content

        ws = (await call("init_workspace", source="jobs/tidy.py", udf="tidy"))["workspace"]
        rows = [[_heavy(index, 20_000 if index % 250 == 0 else 200)] for index in range(999)] + [[None]]
        recorded = await call("record_cases", workspace=ws, inputs=rows, why="escape-heavy strings")
        assert recorded["cases_total"] == 1_000 and len(recorded["recorded"]) + recorded["recorded_left_out"] == 1_000 and recorded["recorded_left_out"] > 0
        again = await call("record_cases", workspace=ws, inputs=rows[:300], why="the same again")
        assert again["recorded"] == [] and len(again["duplicates"]) + again["duplicates_left_out"] == 300 and again["duplicates_left_out"] > 0
        started = await call("start_run", tool="record_cases", arguments={"workspace": ws, "inputs": rows[:500]})
        finished = await call("run_status", run_id=started["run_id"], wait_s=60)
        while finished["status"] == "running":
            finished = await call("run_status", run_id=started["run_id"], wait_s=60)
        assert finished["status"] == "succeeded" and "left out here" in finished["arguments"]["inputs"]
        await call("cancel_run", run_id=started["run_id"])
        data = Path(ws) / "tests" / "data"
        data.mkdir()
        for index in range(1_500):
            (data / f'note_{index:04}_"q"_😀.txt').write_text(_heavy(index, 150) + "\n", encoding="utf-8")
        await call("write_file", workspace=ws, path="candidate/tidy_sql.py", content=TIDY_SQL)
        drafted = await call("draft_candidate", workspace=ws)
        assert drafted["drafted"] is True and drafted["path"] == "candidate/draft.py"
        await call("write_file", workspace=ws, path="candidate/tidy_pandas.py", content=TIDY_VECTORIZED)

        before = await call("snapshot", workspace=ws, label="1,500 notes")
        assert len(before["files"]) + before["files_left_out"] > 1_500 and before["files_left_out"] > 0
        for index in range(1_500):
            (data / f'note_{index:04}_"q"_😀.txt').write_text(_heavy(index, 150) + "\nchanged\n", encoding="utf-8")
        changed = await call("diff", workspace=ws, from_id=before["snapshot_id"])
        assert len(changed["modified"]) + changed["modified_left_out"] == 1_500 and changed["files_left_out"] > 0 and changed["next_offset"] is not None
        one = next(iter(changed["files"]))
        narrowed = await call("diff", workspace=ws, from_id=before["snapshot_id"], path=one)
        assert narrowed["modified"] == [one] and list(narrowed["files"]) == [one] and narrowed["modified_left_out"] == 0
        pages, offset = 0, 0
        while offset is not None and pages < 6:
            offset = (await call("diff", workspace=ws, from_id=before["snapshot_id"], offset=offset))["next_offset"]
            pages += 1
        refused = await client.call_tool("diff", {"workspace": ws, "from_id": before["snapshot_id"], "path": "tests/cases.py"})
        assert refused.is_error and "did not change" in refused.content[0].text and "1,480 more" in refused.content[0].text
        sizes["diff (refused)"] = _encoded(refused)
        reverted = await call("revert", workspace=ws, snapshot_id=before["snapshot_id"])
        assert len(reverted["restored"]) + reverted["restored_left_out"] == 1_500
        status = await call("workspace_status", workspace=ws)
        assert len(status["files"]) + status["files_left_out"] >= 1_500 and status["files_left_out"] > 0
        await call("list_snapshots", workspace=ws)
        listed = await call("list_files", workspace=ws, path="tests/data")
        assert listed["total"] == 1_500 and listed["next_offset"] is not None
        page = await call("read_file", workspace=ws, path="tests/cases.py")
        assert page["next_offset"] is not None and paging.wire_bytes(page["content"]) <= paging.PAGE_BYTES

        await call("run_tests", workspace=ws, target="original")
        await call("run_tests", workspace=ws, target="candidate:tidy_sql")
        await call("coverage_report", workspace=ws)
        mutation = await call("mutation_score", workspace=ws)
        await call("suggest_inputs", workspace=ws)
        await call("audit_tests", workspace=ws)
        if mutation["survivors"]:
            await call("justify", workspace=ws, item=f"mutant:{mutation['survivors'][0]['mutant_id']}", reason="equivalent for every string Spark can deliver")
        else:  # nothing to justify: the refusal is a message too
            refused = await client.call_tool("justify", {"workspace": ws, "item": "line:1", "reason": "nothing is left uncovered here"})
            assert refused.is_error
            sizes["justify"] = _encoded(refused)
        await call("freeze_tests", workspace=ws)
        await call("unfreeze_tests", workspace=ws, reason="checking that unfreezing is bounded too")
        await call("freeze_tests", workspace=ws)
        await call("byte_compare", workspace=ws, candidate="tidy_sql", hidden_rows=1_000)
        # a wrong candidate shows 20,000-character values, a raising one a 100,000-character error: clipped in the result
        await call("write_file", workspace=ws, path="candidate/wrong.py", content=TIDY_WRONG)
        await call("write_file", workspace=ws, path="candidate/raising.py", content=TIDY_RAISING)
        for name in ("wrong", "raising"):
            shown = await call("byte_compare", workspace=ws, candidate=name, hidden_rows=1_000)
            assert shown["equal"] is False and (shown["mismatches"] or shown["error"]), name
        await call("audit_candidate", workspace=ws, candidate="tidy_sql", hidden_rows=1_000)
        deviation = await call("record_deviation", workspace=ws, candidate="tidy_sql", summary="none, recorded to be removed", reason="checking the result size of deviations", returns_where_original_raises=True)
        await call("remove_deviation", workspace=ws, candidate="tidy_sql", deviation_id=deviation["deviations"][0]["deviation_id"])
        await call("generate_data", workspace=ws, rows=2_000)
        await call("run_benchmark", workspace=ws, candidate="tidy_sql", rows=2_000, repeats=1, warmup=0)
        await call("tune_arrow_batch", workspace=ws, candidate="tidy_pandas", sizes=[1_000, 10_000], rows=2_000, repeats=1)
        await call("micro_benchmark", workspace=ws, candidate="tidy_pandas", rows=2_000, repeats=1)
        await call("nsys_profile", workspace=ws, candidate="tidy_sql", rows=2_000)
        await call("try_optimization", workspace=ws, candidate="tidy_sql", label="the first", rows=2_000, repeats=1, hidden_rows=1_000)
        await call("validate_on_data", workspace=ws, candidate="tidy_sql", data="texts.parquet")
        await call("report", workspace=ws)
        await call("apply_conversion", workspace=ws, candidate="tidy_sql")
        await call("scan_project")
        projected = await call("draft_project", path="jobs", into="drafts", hidden_rows=1000)
        assert projected["udfs_found"] == 1 and len(projected["udfs"]) == projected["draftable"]
    called = set(sizes) - {"resources", "diff (refused)"}
    tools = {tool.name for tool in (await _tools(tmp_path, workers))}
    assert tools == called and max(sizes.values()) <= paging.MESSAGE_BYTES, json.dumps(sizes)


async def _tools(root, workers):
    async with Client(build_server(str(root), workers=workers, warm_start=False)) as client:
        return (await client.list_tools()).tools


def test_texts_every_later_result_repeats_and_charts_over_one_message_are_refused_with_what_to_do(root, workspace):
    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp import artifact_links
    from aether_mcp.tools import deviation_records, spec_strength

    with pytest.raises(ToolError, match=r"say it in at most 1,000"):
        spec_strength.justify(root, workspace, "line:1", "because " * 200)
    (Path(workspace) / "candidate" / "fee.py").write_text('TARGET = "sql"\n', encoding="utf-8")
    with pytest.raises(ToolError, match=r"must each fit in 1,000 characters"):
        deviation_records.record_deviation(root, workspace, "fee", "a long summary " * 100, "a reason that is long enough", ulp_tolerance=1)
    assert not (Path(workspace) / "deviations").exists() or not any((Path(workspace) / "deviations").iterdir())  # nothing recorded
    bench = Path(workspace) / ".aether" / "bench" / "b1"
    bench.mkdir(parents=True)
    (bench / "wide.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * artifact_links.MAX_CHART_BYTES)
    with pytest.raises(ToolError, match=r"at most 56,000 bytes, which fits one message.*from the workspace folder"):
        artifact_links.read_chart(root, Path(workspace).name, ".aether/bench/b1/wide.png")
