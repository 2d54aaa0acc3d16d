"""What an MCP client sees: every tool's success and refusal through the SDK's in-memory client."""

import json
import os
from pathlib import Path

import pytest
from conftest import SHIPPING_CASES
from mcp import Client

from aether_mcp.server import build_server

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"
TOOL_ORDER = [
    "scan_project",
    "init_workspace",
    "workspace_status",
    "list_files",
    "read_file",
    "write_file",
    "record_cases",
    "run_tests",
    "coverage_report",
    "mutation_score",
    "suggest_inputs",
    "audit_tests",
    "justify",
    "freeze_tests",
    "unfreeze_tests",
    "draft_candidate",
    "draft_project",
    "byte_compare",
    "audit_candidate",
    "record_deviation",
    "remove_deviation",
    "generate_data",
    "run_benchmark",
    "validate_on_data",
    "tune_arrow_batch",
    "micro_benchmark",
    "nsys_profile",
    "try_optimization",
    "report",
    "apply_conversion",
    "snapshot",
    "list_snapshots",
    "diff",
    "revert",
    "start_run",
    "run_status",
    "cancel_run",
]
# read-only: changes no file of the agent or the user (a tool may add the server's own records under .aether/)
READ_ONLY = {
    "scan_project", "workspace_status", "list_files", "read_file", "list_snapshots", "diff", "run_status",
    "run_tests", "coverage_report", "mutation_score", "suggest_inputs", "audit_tests", "byte_compare", "audit_candidate",
    "run_benchmark", "validate_on_data", "tune_arrow_batch", "micro_benchmark", "nsys_profile", "report",
}

# may reach other machines: a spark:// or sc:// master given or frozen in aether.toml's [benchmark], or a data URI
# (s3a://, hdfs://); start_run can start any of them. Every other tool stays on this machine.
OPEN_WORLD = {"run_benchmark", "validate_on_data", "tune_arrow_batch", "try_optimization", "start_run"}

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def client(root, workers):
    async with Client(build_server(str(root.path), workers=workers)) as connected:
        yield connected


async def ok(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def refused(client, tool, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    text = result.content[0].text
    assert "Traceback" not in text
    return text


async def new_workspace(client) -> str:
    created = await ok(client, "init_workspace", source="jobs/shipping.py", udf="shipping_fee")
    await ok(client, "write_file", workspace=created["workspace"], path="tests/cases.py", content=SHIPPING_CASES)
    return created["workspace"]


def _wire(tools) -> list[dict]:
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


async def test_tools_list_is_pinned(client):
    listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == TOOL_ORDER
    for tool in listed:
        assert tool.title and tool.description and len(tool.description.encode()) <= 1200
        assert tool.annotations.open_world_hint is (tool.name in OPEN_WORLD), tool.name
        # a tool that takes a Spark master or a data URI can reach another machine, whatever else it does
        if {"master", "data"} & set(tool.input_schema["properties"]):
            assert tool.name in OPEN_WORLD, tool.name
        assert tool.annotations.read_only_hint is (tool.name in READ_ONLY)
        assert tool.input_schema["additionalProperties"] is False
        assert '"title"' not in json.dumps(tool.input_schema)
        # result schemas are a resource each, not part of the list every session loads
        assert tool.output_schema is None
        schema = await client.read_resource(f"aether://schemas/{tool.name}")
        assert json.loads(schema.contents[0].text)["type"] == "object"
    wire = _wire(listed)
    # what a host loads into the agent's context before its first call
    assert len(json.dumps(wire, separators=(",", ":"))) < 40_000
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(wire, indent=2, sort_keys=True) + "\n")
    assert wire == json.loads(SNAPSHOT.read_text()), "tools/list changed: review it, then rerun with UPDATE_SNAPSHOTS=1"


async def test_init_workspace_and_status(client, root):
    created = await ok(client, "init_workspace", source="jobs/shipping.py", udf="shipping_fee")
    assert created["workspace"] == str(root.path / "aether_workspaces" / "shipping_fee")
    assert created["udf"]["args"] == [
        {"name": "weight", "type": "double", "type_from": "hint", "values": None, "values_from": None},
        {"name": "express", "type": "boolean", "type_from": "hint", "values": None, "values_from": None},
    ]
    status = await ok(client, "workspace_status", workspace=created["workspace"])
    assert status["integrity"]["intact"] and status["snapshots"] == 1
    text = await refused(client, "init_workspace", source="jobs/shipping.py", udf="fee")
    assert text == "Error executing tool init_workspace: UDF 'fee' not found in jobs/shipping.py. UDFs there: shipping_fee (line 11, @udf(...)). Pass one of these names as udf."
    text = await refused(client, "workspace_status", workspace="jobs")
    assert "is not an aether-mcp workspace (no aether.toml); give the folder init_workspace created" in text


async def test_init_workspace_follows_factories_literals_and_local_modules_across_the_project_through_the_protocol(client, root):
    import shutil

    shapes = Path(__file__).parent / "shapes"
    for name in ("static_factory", "cross_file_factory"):
        shutil.copytree(shapes / name, root.path / name, ignore=shutil.ignore_patterns("candidate*.py", "__pycache__"))
    # a class's static method as the factory, and a factory in another file of the project (item 4)
    static = await ok(client, "init_workspace", source="static_factory/job.py", udf="score_0_100", arg_types={"value": "double"})
    assert static["udf"]["form"] == "score_0_100 = CommonUdf.Clamp(...)"
    crossed = await ok(client, "init_workspace", source="cross_file_factory/job.py", udf="card_fee", arg_types={"amount": "double"})
    assert crossed["udf"]["form"] == "card_fee = make_fee(...)" and any("cross_file_factory/fees.py" in note for note in crossed["notes"])
    text = await refused(client, "init_workspace", source="cross_file_factory/fees.py", udf="make_fee")
    assert "'make_fee' in cross_file_factory/fees.py is a UDF factory" in text and "cross_file_factory/job.py:5: make_fee(0.029)" in text
    # literal arguments read from the calls in the project's other files (item 5)
    (root.path / "rates.py").write_text("from pyspark.sql.functions import udf\n\n\n@udf('double')\ndef taxed(amount: float, rate: float) -> float:\n    return None if amount is None else amount * (1 + rate)\n")
    (root.path / "billing.py").write_text("from pyspark.sql import functions as F\n\nfrom rates import taxed\n\n\ndef run(df):\n    return df.select(taxed(F.col('amount'), F.lit(0.2)))\n")
    taxed = await ok(client, "init_workspace", source="billing.py", udf="taxed")
    assert {a["name"]: a["values"] for a in taxed["udf"]["args"]} == {"amount": None, "rate": [0.2]}
    assert any(note.startswith("drawn only from the literals the job passes: rate = 0.2 (billing.py:7)") for note in taxed["notes"])
    # a star-imported module of the project that is not where the job imports it from (item 3)
    (root.path / "lib").mkdir()
    (root.path / "lib" / "bands.py").write_text("ADULT = 'adult'\n")
    (root.path / "ages.py").write_text("from pyspark.sql.functions import udf\n\nfrom bands import *\n\n\n@udf('string')\ndef band(age: int) -> str:\n    return ADULT\n")
    text = await refused(client, "init_workspace", source="ages.py", udf="band")
    assert "reads ADULT from `from bands import *` in ages.py" in text and "lib/bands.py exists" in text


async def test_file_tools(client):
    ws = await new_workspace(client)
    written = await ok(client, "write_file", workspace=ws, path="candidate/fee.py", content="TARGET = 'sql'\n")
    assert written == {"path": "candidate/fee.py", "bytes_written": 15, "created": True}
    assert (await ok(client, "read_file", workspace=ws, path="candidate/fee.py"))["content"] == "TARGET = 'sql'\n"
    listed = {e["path"] for e in (await ok(client, "list_files", workspace=ws))["entries"]}
    assert {"candidate/fee.py", "original/udf.py", "tests/cases.py"} <= listed
    assert "is protected and cannot be written: original/ holds the reference UDF" in await refused(client, "write_file", workspace=ws, path="original/udf.py", content="")
    assert "does not exist in the workspace. Call list_files" in await refused(client, "read_file", workspace=ws, path="nope.py")
    assert "contains '..'" in await refused(client, "list_files", workspace=ws, path="../..")


async def test_snapshot_tools(client):
    ws = await new_workspace(client)
    taken = await ok(client, "snapshot", workspace=ws, label="cases written")
    await ok(client, "write_file", workspace=ws, path="tests/cases.py", content="CASES = []\n")
    changed = await ok(client, "diff", workspace=ws, from_id=taken["snapshot_id"])
    assert changed["modified"] == ["tests/cases.py"]
    reverted = await ok(client, "revert", workspace=ws, snapshot_id=taken["snapshot_id"])
    assert reverted["restored"] == ["tests/cases.py"] and reverted["backup_snapshot_id"] == 2
    listed = await ok(client, "list_snapshots", workspace=ws)
    assert [s["label"] for s in listed["snapshots"]] == ["init: empty tests, no candidates", "cases written", "before revert to 1"]
    assert "label is empty" in await refused(client, "snapshot", workspace=ws, label="")
    assert "unknown snapshot_id 9" in await refused(client, "revert", workspace=ws, snapshot_id=9)
    assert "unknown snapshot_id 9" in await refused(client, "diff", workspace=ws, from_id=9)


async def test_arguments_of_the_wrong_type_are_refused_by_schema(client):
    text = await refused(client, "revert", workspace="x", snapshot_id="latest")
    assert "snapshot_id" in text


async def test_every_tool_but_status_refuses_a_tampered_workspace(client):
    ws = await new_workspace(client)
    (Path(ws) / "original" / "udf.py").write_text("def shipping_fee(weight, express):\n    return 1.0\n")
    calls = {
        "list_files": {},
        "read_file": {"path": "tests/cases.py"},
        "write_file": {"path": "tests/cases.py", "content": "CASES = []\n"},
        "run_tests": {"target": "original"},
        "record_cases": {"inputs": [[1.0, True]]},
        "coverage_report": {},
        "mutation_score": {},
        "suggest_inputs": {},
        "audit_tests": {},
        "justify": {"item": "line:1", "reason": "unreachable in every job run"},
        "freeze_tests": {},
        "unfreeze_tests": {"reason": "changing the tests on purpose"},
        "draft_candidate": {},
        "byte_compare": {"candidate": "fee"},
        "audit_candidate": {"candidate": "fee"},
        "record_deviation": {"candidate": "fee", "summary": "a long enough summary", "reason": "a long enough reason", "ulp_tolerance": 2},
        "remove_deviation": {"candidate": "fee", "deviation_id": "dev-1"},
        "generate_data": {"rows": 10},
        "run_benchmark": {"candidate": "fee"},
        "tune_arrow_batch": {"candidate": "fee"},
        "micro_benchmark": {"candidate": "fee"},
        "nsys_profile": {"candidate": "fee"},
        "try_optimization": {"candidate": "fee", "label": "x"},
        "report": {},
        "snapshot": {"label": "x"},
        "list_snapshots": {},
        "diff": {"from_id": 0},
        "revert": {"snapshot_id": 0},
    }
    for tool, arguments in calls.items():
        text = await refused(client, tool, workspace=ws, **arguments)
        assert "edited behind the server's back (modified: original/udf.py)" in text and "To recover" in text, tool
    status = await ok(client, "workspace_status", workspace=ws)
    assert status["integrity"]["modified"] == ["original/udf.py"]
    assert (Path(ws) / "tests" / "cases.py").read_text() == SHIPPING_CASES  # nothing was lost
    assert not (Path(ws) / "candidate" / "draft.py").exists()  # nothing drafted from an original it cannot trust


@pytest.mark.slow
async def test_run_tests_reports_progress_and_structured_results(client):
    ws = await new_workspace(client)
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    result = await client.call_tool("run_tests", {"workspace": ws, "target": "original"}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["passed"] == 5
    assert seen and seen[-1] == (5, 5)
    text = await refused(client, "run_tests", workspace=ws, target="candidate:fast")
    assert "candidate/fast.py does not exist. Candidates in this workspace: none yet" in text


def _pytest_processes_in(directory: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == directory and b"pytest" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
async def test_cancelling_run_tests_stops_the_test_process(client):
    import anyio

    ws = await new_workspace(client)
    await ok(client, "write_file", workspace=ws, path="tests/test_hang.py", content="import time\n\ndef test_hang():\n    time.sleep(600)\n")
    async with anyio.create_task_group() as group:
        group.start_soon(client.call_tool, "run_tests", {"workspace": ws, "target": "original"})
        with anyio.fail_after(60):
            while not _pytest_processes_in(ws):
                await anyio.sleep(0.2)
        group.cancel_scope.cancel()
    with anyio.fail_after(30):
        while _pytest_processes_in(ws):
            await anyio.sleep(0.5)


@pytest.mark.slow
async def test_byte_compare_proves_equality_through_the_protocol(client):
    from conftest import SQL_CANDIDATE

    ws = await new_workspace(client)
    await ok(client, "write_file", workspace=ws, path="candidate/fee.py", content=SQL_CANDIDATE)
    result = await ok(client, "byte_compare", workspace=ws, candidate="fee", hidden_rows=2000)
    assert result["equal"] is True and result["rows_compared"] > 1000 and result["original_raised"]["count"] > 0
    assert result["policy"]["floats"] == "exact" and result["backend"] == "cpu" and result["backend_note"].startswith("spark-sql") and result["gpu_verified"] is False
    status = await ok(client, "workspace_status", workspace=ws)
    assert {g["name"]: g["status"] for g in status["gates"]}["candidate_equal"] == "pass"
    await ok(client, "write_file", workspace=ws, path="candidate/fee.py", content=SQL_CANDIDATE + "\n# edited\n")
    status = await ok(client, "workspace_status", workspace=ws)
    assert {g["name"]: g["status"] for g in status["gates"]}["candidate_equal"] == "pending"
    text = await refused(client, "byte_compare", workspace=ws, candidate="fee", hidden_rows=10**7)
    assert "hidden_rows: Input should be less than or equal to 200000 (given 10000000)" in text
    # a candidate whose job fails in the JVM: each row's failure says why, not which py4j call carried it
    broken = 'from pyspark.sql import functions as F\n\nTARGET = "sql"\n\n\ndef build(weight, express):\n    return F.when(weight.isNotNull(), F.format_string(\"%d\", weight).cast(\"double\"))\n'
    await ok(client, "write_file", workspace=ws, path="candidate/broken.py", content=broken)
    result = await ok(client, "byte_compare", workspace=ws, candidate="broken", hidden_rows=1000)
    shown = [m["actual"] for m in result["mismatches"] if "raised" in m["actual"]]
    assert result["equal"] is False and shown, result["mismatches"][:3]
    assert all("d != java.lang.Double" in text and "An error occurred while calling" not in text for text in shown), [t for t in shown if "java.lang.Double" not in t][:3]


@pytest.mark.slow
async def test_phase_one_tools_through_the_protocol(client):
    ws = await new_workspace(client)
    recorded = await ok(client, "record_cases", workspace=ws, inputs=[[3.0, True], ["NaN", False]], why="heavy and unknown")
    assert [c["expected"] for c in recorded["recorded"]] == ["12.98", "nan"] and recorded["cases_total"] == 7
    assert "input 0, argument 'express' (boolean)" in await refused(client, "record_cases", workspace=ws, inputs=[[1.0, "yes"]])
    coverage = await ok(client, "coverage_report", workspace=ws)
    assert coverage["branch_percent"] == 100.0 and coverage["gate"]["status"] == "pass"
    mutation = await ok(client, "mutation_score", workspace=ws)
    assert mutation["total"] > 10 and 0 < mutation["score"] <= 1
    suggestions = await ok(client, "suggest_inputs", workspace=ws)
    assert suggestions["suggestions"] and all(s["targets"] for s in suggestions["suggestions"])
    audit = await ok(client, "audit_tests", workspace=ws)
    assert audit["clean"] is True and audit["tests_reviewed"] == 1
    assert "is not an uncovered line or branch or a surviving mutant" in await refused(client, "justify", workspace=ws, item="line:1", reason="unreachable in every job run")
    for survivor in mutation["survivors"]:
        await ok(client, "justify", workspace=ws, item=f"mutant:{survivor['mutant_id']}", reason="equivalent for every input Spark can deliver")
    assert "tests_pass_on_original" in await refused(client, "freeze_tests", workspace=ws)
    await ok(client, "run_tests", workspace=ws, target="original")
    frozen = await ok(client, "freeze_tests", workspace=ws)
    assert frozen["cases"] == 7
    assert "already frozen" in await refused(client, "freeze_tests", workspace=ws)
    unfrozen = await ok(client, "unfreeze_tests", workspace=ws, reason="adding cases for a new tier")
    assert unfrozen["changed_since_freeze"] == []
    assert "not frozen" in await refused(client, "unfreeze_tests", workspace=ws, reason="adding cases for a new tier")


CHEAT = """
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(weight, express):
    out, missing = np.zeros(len(weight)), weight.isna().to_numpy()
    for i, (w, e) in enumerate(zip(weight.fillna(1.0), express.fillna(False))):
        if w <= 0:
            raise ValueError("weight must be positive")
        fee = 4.99 if w < 2.0 else 4.99 + (w - 2.0) * 1.5
        out[i] = fee * 2 if e else fee
    return pd.Series(pd.arrays.FloatingArray(out, missing))
"""


@pytest.mark.slow
async def test_audit_candidate_and_deviations_through_the_protocol(client):
    from conftest import VECTORIZED_CANDIDATE

    ws = await new_workspace(client)
    await ok(client, "write_file", workspace=ws, path="candidate/fee.py", content=VECTORIZED_CANDIDATE)
    seen = []

    async def on_progress(progress, total, message):
        seen.append(message)

    result = await client.call_tool("audit_candidate", {"workspace": ws, "candidate": "fee", "hidden_rows": 2000}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    clean = result.structured_content
    assert clean["verdict"] == "PASS" and clean["reasons"] == [] and clean["comparison"]["equal"] is True
    assert seen[-1] == "PASS" and Path(clean["result_path"]).is_file()

    await ok(client, "write_file", workspace=ws, path="candidate/loop.py", content=CHEAT)
    caught = await ok(client, "audit_candidate", workspace=ws, candidate="loop", hidden_rows=2000)
    assert caught["verdict"] == "FAIL" and caught["comparison"]["equal"] is True  # right answers, the wrong way
    rules = {(f["rule"], f["check"]) for f in caught["findings"] if f["severity"] == "block"}
    assert {("row_at_a_time", "static"), ("row_at_a_time", "dynamic")} <= rules
    static = next(f for f in caught["findings"] if f["check"] == "static")
    assert static["file"] == "candidate/loop.py" and static["line"] == 10 and static["fix"]

    status = await ok(client, "workspace_status", workspace=ws)
    assert {name: a["verdict"] for name, a in status["last_audits"].items()} == {"fee": "PASS", "loop": "FAIL"}
    assert {g["name"]: g["status"] for g in status["gates"]}["candidate_audited"] == "pass"

    recorded = await ok(client, "record_deviation", workspace=ws, candidate="fee", summary="fees within 2 ULP", reason="cents are rounded downstream", ulp_tolerance=2)
    assert [d["deviation_id"] for d in recorded["deviations"]] == ["dev-1"]
    text = await refused(client, "record_deviation", workspace=ws, candidate="fee", summary="fees within 2 ULP", reason="cents are rounded downstream")
    assert "must declare what it relaxes" in text
    text = await refused(client, "record_deviation", workspace=ws, candidate="fee", summary="heavy parcels", reason="out of scope here", applies_to="os.system('x')")
    assert "applies_to calls 'os.system'" in text
    remaining = await ok(client, "remove_deviation", workspace=ws, candidate="fee", deviation_id="dev-1")
    assert remaining["deviations"] == []
    assert "has no deviation 'dev-1'" in await refused(client, "remove_deviation", workspace=ws, candidate="fee", deviation_id="dev-1")
    assert "candidate/ghost.py does not exist" in await refused(client, "audit_candidate", workspace=ws, candidate="ghost")
    assert "hidden_rows: Input should be greater than or equal to 1000 (given 10)" in await refused(client, "audit_candidate", workspace=ws, candidate="fee", hidden_rows=10)


@pytest.mark.slow
async def test_benchmark_tools_through_the_protocol(client):
    from conftest import SQL_CANDIDATE

    ws = await new_workspace(client)
    spec = {"weight": {"min": 0.1, "max": 50.0}}
    data = await ok(client, "generate_data", workspace=ws, rows=3000, spec=spec)
    assert data["rows"] == 3000 and data["reused"] is False and Path(data["path"]).is_file()
    assert (await ok(client, "generate_data", workspace=ws, rows=3000, spec=spec))["reused"] is True
    assert "spec names 'price'" in await refused(client, "generate_data", workspace=ws, rows=10, spec={"price": {"min": 1}})
    await ok(client, "write_file", workspace=ws, path="candidate/fee.py", content=SQL_CANDIDATE)
    # a timed run through the protocol, with its progress, is part of test_optimize_loop
    # the schema names the modes, and a call outside it is refused before anything runs
    text = await refused(client, "run_benchmark", workspace=ws, candidate="fee", modes=["turbo"])
    assert "modes.0: Input should be 'floor', 'original', 'original_arrow' or 'candidate'" in text


async def test_instructions_explain_the_loop_in_one_screen(client):
    assert len(client.instructions.encode()) <= 1850  # hosts cut at 2 KB: room is left for what comes next
    for step in ("scan_project", "1. Specify", "2. Convert: draft_candidate(ws)", "3. Benchmark", "4. Optimize", "try_optimization", "report(ws)", "validate_on_data", "apply_conversion", "record_deviation"):
        assert step in client.instructions


async def test_prompts_give_the_loop_and_each_phase(client):
    listed = (await client.list_prompts()).prompts
    assert [p.name for p in listed] == ["convert_udf", "specify", "convert", "benchmark", "optimize"]
    assert all(p.title and p.description for p in listed)
    assert [a.name for a in listed[0].arguments] == ["source", "udf"] and all(a.required for a in listed[0].arguments)
    whole = (await client.get_prompt("convert_udf", {"source": "jobs/shipping.py", "udf": "shipping_fee"})).messages[0].content.text
    assert 'init_workspace(source="jobs/shipping.py", udf="shipping_fee")' in whole
    for rule in ("Never weaken the tests", "record_deviation", "Stop after 10 steps or 3 rejections in a row", "freeze_tests", "audit_candidate", "report(workspace)"):
        assert rule in whole
    # convert starts from the translator's draft where there is one, before any hand-written candidate
    assert whole.index("draft_candidate(workspace)") < whole.index('write_file(workspace, "candidate/<name>.py"')
    optimize = (await client.get_prompt("optimize", {"workspace": "aether_workspaces/shipping_fee", "candidate": "fee"})).messages[0].content.text
    assert optimize.startswith("Workspace: aether_workspaces/shipping_fee") and 'try_optimization(workspace, "fee", label)' in optimize
    specify = (await client.get_prompt("specify", {"workspace": "w"})).messages[0].content.text
    assert "freeze_tests(workspace)" in specify and "Never weaken the tests" in specify
    # the numbers a prompt gives are the ones the tool's schema applies
    benchmark = (await client.get_prompt("benchmark", {"workspace": "w", "candidate": "fee"})).messages[0].content.text
    schema = next(t for t in (await client.list_tools()).tools if t.name == "run_benchmark").input_schema
    assert f"rows default {schema['properties']['rows']['default']:,}" in benchmark, benchmark[:300]


async def test_reference_notes_are_resources(client):
    listed = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert set(listed) == {"aether://notes/semantic-traps", "aether://notes/spark-functions", "aether://notes/gpu-idioms"}
    expected = {
        "aether://notes/semantic-traps": ("round", "bround", "pmod", "trim", "split", "lower", "None", "ANSI", "NaN"),
        "aether://notes/spark-functions": ("F.when", "isin", "regexp_replace", "substring", "concat_ws", "least"),
        "aether://notes/gpu-idioms": ("cuDF", "CuPy", "xp.where", ".apply", "to_numpy"),
    }
    for uri, words in expected.items():
        assert listed[uri].mime_type == "text/markdown" and listed[uri].title
        text = (await client.read_resource(uri)).contents[0].text
        assert text.startswith("# ") and all(word in text for word in words), uri


async def test_a_workspace_report_is_a_resource(client):
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [
        "aether://schemas/{tool}",
        "aether://workspaces/{name}/file/{+path}{?offset}",
        "aether://workspaces/{name}/chart/{+path}",
        "aether://workspaces/{name}/report",
    ]
    await new_workspace(client)
    text = (await client.read_resource("aether://workspaces/shipping_fee/report")).contents[0].text
    assert text.startswith("# Conversion report: `shipping_fee`") and "no candidate is verified yet" in text
    with pytest.raises(Exception, match="no workspace named 'ghost'"):
        await client.read_resource("aether://workspaces/ghost/report")


async def test_report_through_the_protocol_before_any_candidate(client):
    ws = await new_workspace(client)
    written = await ok(client, "report", workspace=ws)
    assert written["recommended"] is None and written["recommendation"].startswith("no candidate is verified yet")
    assert Path(written["artifacts"]["markdown"]).read_text() == written["embedded_markdown"]
    assert written["sections"] == ["The UDF and its source", "Tests", "Candidates", "Recorded deviations", "Benchmarks", "Validation on data", "Profiles", "Optimization journal", "Recommendation", "Before shipping: verify"]
    read = await ok(client, "read_file", workspace=ws, path=".aether/report/report.md")
    assert read["content"] == written["embedded_markdown"]


async def test_try_optimization_refusals(client):
    from conftest import SQL_CANDIDATE

    ws = await new_workspace(client)
    assert "candidate/fee.py does not exist" in await refused(client, "try_optimization", workspace=ws, candidate="fee", label="first")
    await ok(client, "write_file", workspace=ws, path="candidate/fee.py", content=SQL_CANDIDATE)
    assert "label must say what this attempt changes" in await refused(client, "try_optimization", workspace=ws, candidate="fee", label=" ")
    assert "min_gain: Input should be less than or equal to 1 (given 2.0)" in await refused(client, "try_optimization", workspace=ws, candidate="fee", label="first", min_gain=2.0)
    assert "repeats: Input should be greater than or equal to 1 (given 0)" in await refused(client, "try_optimization", workspace=ws, candidate="fee", label="first", repeats=0)
    assert "hidden_rows: Input should be greater than or equal to 1000 (given 10)" in await refused(client, "try_optimization", workspace=ws, candidate="fee", label="first", hidden_rows=10)
    text = await refused(client, "try_optimization", workspace=ws, candidate="fee", label="first")
    assert "the tests are not frozen" in text and "freeze_tests(workspace)" in text
    assert (Path(ws) / "candidate" / "fee.py").read_text() == SQL_CANDIDATE and not (Path(ws) / ".aether" / "journal.jsonl").exists()


async def test_the_spark_workers_start_and_warm_up_in_the_background_as_the_server_starts(root):
    import time

    import anyio

    from aether_mcp.processes.worker_pool import WorkerPool

    pool = WorkerPool(forbidden=[root.path])
    try:
        async with Client(build_server(str(root.path), workers=pool, warm_start=True)) as connected:
            await connected.list_tools()  # nothing that needs Spark is called
            deadline = time.monotonic() + 300
            while pool.ready_roles() != ["candidate", "reference"] and time.monotonic() < deadline:
                await anyio.sleep(1)
            assert pool.ready_roles() == ["candidate", "reference"]
            assert pool.starts == 2  # one of each, side by side
    finally:
        pool.close()


@pytest.mark.slow
async def test_a_candidate_takes_the_jobs_constants_as_judged_and_the_converted_job_gets_the_same_through_the_protocol(client, root):
    import shutil

    shape = Path(__file__).parent / "shapes" / "local_module_constant"
    shutil.copytree(shape, root.path / "salaries", ignore=shutil.ignore_patterns("candidate*.py", "__pycache__"))
    ws = (await ok(client, "init_workspace", source="salaries/job.py", udf="strip_salary"))["workspace"]
    # `from patterns import SALARY_RE`: the job's own compiled pattern, beside the job
    await ok(client, "write_file", workspace=ws, path="candidate/strip.py", content=(shape / "candidate.py").read_text())
    compared = await ok(client, "byte_compare", workspace=ws, candidate="strip", hidden_rows=1000)
    assert compared["equal"] is True and compared["rows_compared"] >= 1000, compared["mismatches"][:3]
    audited = await ok(client, "audit_candidate", workspace=ws, candidate="strip", hidden_rows=1000)
    assert audited["verdict"].startswith("PASS"), audited["reasons"]
    await ok(client, "apply_conversion", workspace=ws, candidate="strip")
    module = (root.path / "salaries" / "strip_salary_strip.py").read_text()
    assert "from patterns import" not in module and "SALARY_RE = _aether_job_re.compile('[$,]')" in module
    assert "inlined as judged (salaries/patterns.py)" in module.splitlines()[0]
    # a function of the job's module comes with the pattern it reads (row by row here, so judged equal, not fast)
    per_row = 'from patterns import strip_money\n\nTARGET = "vectorized"\n\n\ndef evaluate(text):\n    return text.map(strip_money, na_action=\"ignore\")\n'
    await ok(client, "write_file", workspace=ws, path="candidate/per_row.py", content=per_row)
    rowwise = await ok(client, "byte_compare", workspace=ws, candidate="per_row", hidden_rows=1000)
    assert rowwise["equal"] is True, rowwise["mismatches"][:3]
    # the judged module is called what the converted job calls it (<udf>_<candidate>), in the Python workers and in a sql build
    named = 'import re\n\nTARGET = "vectorized"\n\n\ndef evaluate(text):\n    return text.str.replace(re.compile("[$,]"), "", regex=True) if __name__ == "strip_salary_named" else text\n'
    await ok(client, "write_file", workspace=ws, path="candidate/named.py", content=named)
    assert (await ok(client, "byte_compare", workspace=ws, candidate="named", hidden_rows=1000))["equal"] is True
    named_sql = 'from pyspark.sql import functions as F\n\nTARGET = "sql"\n\n\ndef build(text):\n    return F.regexp_replace(text, "[$,]", "") if __name__ == "strip_salary_named_sql" else text\n'
    await ok(client, "write_file", workspace=ws, path="candidate/named_sql.py", content=named_sql)
    assert (await ok(client, "byte_compare", workspace=ws, candidate="named_sql", hidden_rows=1000))["equal"] is True
    # the module itself is refused saying what to write instead, and the server stays up
    whole = 'import patterns\n\nTARGET = "vectorized"\n\n\ndef evaluate(text):\n    return text.str.replace(patterns.SALARY_RE, "", regex=True)\n'
    await ok(client, "write_file", workspace=ws, path="candidate/whole.py", content=whole)
    text = await refused(client, "byte_compare", workspace=ws, candidate="whole", hidden_rows=1000)
    assert "line 1 imports the job's module patterns (salaries/patterns.py) whole" in text and "from patterns import NAME" in text
    assert (await ok(client, "workspace_status", workspace=ws))["workspace"] == ws


@pytest.mark.slow
async def test_dates_are_drawn_and_an_eval_is_named_where_it_is_refused_through_the_protocol(client, root):
    import shutil

    shape = Path(__file__).parent / "shapes" / "date_parsing"
    shutil.copytree(shape, root.path / "signups", ignore=shutil.ignore_patterns("candidate*.py", "__pycache__"))
    ws = (await ok(client, "init_workspace", source="signups/job.py", udf="signup_hour", arg_types={"created_at": "string"}))["workspace"]
    await ok(client, "write_file", workspace=ws, path="candidate/hour.py", content=(shape / "candidate.py").read_text())
    compared = await ok(client, "byte_compare", workspace=ws, candidate="hour", hidden_rows=1000)
    evidence = compared["evidence"]
    # the format is mined from the source and its comment: most hidden rows parse and give an hour
    assert compared["equal"] is True and evidence["hidden_rows_with_a_value"] >= evidence["hidden_rows_generated"] // 4, evidence
    evil = 'import pandas as pd\n\nTARGET = "vectorized"\n\n\ndef evaluate(created_at):\n    return pd.Series([eval("int(v[11:13])") for v in created_at])\n'
    await ok(client, "write_file", workspace=ws, path="candidate/evil.py", content=evil)
    audited = await ok(client, "audit_candidate", workspace=ws, candidate="evil", hidden_rows=1000)
    found = {(f["rule"], f["check"]): f for f in audited["findings"]}
    # refused by the rules and by the watch, each saying what it refused and where
    assert audited["verdict"] == "FAIL" and "[dynamic code: eval()]" in found["reaches_original", "static"]["evidence"]
    watched = found["reaches_original", "dynamic"]
    assert "watch: compile (compiles code as '<string>')" in watched["evidence"] and watched["line"] == 7, watched
