"""What an MCP host meets: results it can hold, arguments checked against the schema, the protocol's
error codes, a root it must be given, and long work it can start, poll and stop."""

import json
import os
import re
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import anyio
import pytest
from conftest import SHIPPING_CASES
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from aether_mcp import paging
from aether_mcp.paging import PAGE_BYTES
from aether_mcp.server import build_server

pytestmark = pytest.mark.anyio
CONSOLE_SCRIPT = Path(sys.executable).parent / "aether-mcp"
HEAVY = ("pyspark", "pandas", "numpy", "pyarrow", "matplotlib")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def client(root, workers):
    async with Client(build_server(str(root.path), workers=workers, warm_start=False)) as connected:
        yield connected


async def ok(client, tool, /, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def refused(client, tool, /, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    return result.content[0].text


async def test_a_megabyte_file_comes_back_whole_through_pages(client, workspace):
    text = "".join(f"line {i}: {'x' * (i % 97)}\n" for i in range(1, 20_001))
    assert len(text.encode()) > 1_000_000
    (Path(workspace) / "tests" / "big.txt").write_text(text, encoding="utf-8")
    pages, offset = [], 0
    while offset is not None:
        result = await client.call_tool("read_file", {"workspace": workspace, "path": "tests/big.txt", "offset": offset})
        page = result.structured_content
        assert paging.wire_bytes(page["content"]) <= PAGE_BYTES and page["content"].endswith("\n")  # whole lines only
        assert json.loads(result.content[0].text) == page and "\n  " not in result.content[0].text  # the mirror is compact JSON
        assert page["first_line"] == text.count("\n", 0, offset) + 1
        if page["next_offset"] is not None:
            assert page["truncated"] and f"offset={page['next_offset']})" in page["more"]
        else:
            assert not page["truncated"] and page["more"] is None and page["last_line"] == page["total_lines"] == 20_000
        pages.append(page["content"])
        offset = page["next_offset"]
    assert "".join(pages) == text and len(pages) > 1_000_000 // paging.chars_per_page()
    at = await ok(client, "read_file", workspace=workspace, path="tests/big.txt", start_line=12_345)
    assert at["first_line"] == 12_345 and at["content"].startswith("line 12345: ")
    assert "past the end" in await refused(client, "read_file", workspace=workspace, path="tests/big.txt", start_line=20_001)
    assert "past the end" in await refused(client, "read_file", workspace=workspace, path="tests/big.txt", offset=len(text) + 1)


async def test_a_large_diff_comes_back_whole_through_pages_and_by_file(client, workspace):
    taken = await ok(client, "snapshot", workspace=workspace, label="before")
    for index in range(3):
        body = "".join(f"VALUE_{index}_{line} = {line * index}\n" for line in range(4_000))
        await ok(client, "write_file", workspace=workspace, path=f"candidate/big_{index}.py", content=body)

    async def whole(**extra) -> tuple[str, dict]:
        parts, offset, first = [], 0, None
        while offset is not None:
            page = await ok(client, "diff", workspace=workspace, from_id=taken["snapshot_id"], offset=offset, **extra)
            first = first or page
            assert paging.wire_bytes(page["diff"]) <= PAGE_BYTES and page["total_chars"] == first["total_chars"]
            parts.append(page["diff"])
            offset = page["next_offset"]
        return "".join(parts), first

    everything, first = await whole()
    assert len(everything) == first["total_chars"] > 3 * paging.chars_per_page() and first["more"].startswith(f"{first['total_chars'] - first['next_offset']:,} more characters")
    assert first["files"] == {f"candidate/big_{index}.py": 4_000 for index in range(3)}
    by_file = [(await whole(path=f"candidate/big_{index}.py"))[0] for index in range(3)]
    assert "".join(by_file) == everything  # the files' diffs, in order, are the whole diff
    assert "did not change" in await refused(client, "diff", workspace=workspace, from_id=taken["snapshot_id"], path="tests/cases.py")


async def test_a_long_file_list_comes_in_pages_that_together_list_everything(client, workspace):
    for index in range(700):
        (Path(workspace) / "tests" / f"note_{index:03}.txt").write_text("x", encoding="utf-8")
    seen, offset = [], 0
    while offset is not None:
        page = await ok(client, "list_files", workspace=workspace, path="tests", offset=offset)
        assert len(page["entries"]) <= 300 and page["total"] >= 700
        seen += [entry["path"] for entry in page["entries"]]
        assert (page["more"] is None) == (page["next_offset"] is None)
        offset = page["next_offset"]
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == page["total"]
    assert {f"tests/note_{index:03}.txt" for index in range(700)} <= set(seen)


async def _read_resource(client, uri: str):
    (contents,) = (await client.read_resource(uri)).contents
    return contents


async def test_artifacts_a_result_names_come_as_resource_links_that_read_back_whole_through_pages(client, workspace):
    import base64

    runs = Path(workspace) / ".aether" / "runs" / "r1"
    runs.mkdir(parents=True)
    log = "".join(f"row {i}: {'y' * (i % 89)}\n" for i in range(6_000))
    (runs / "big.log").write_text(log, encoding="utf-8")
    from aether_mcp.artifact_links import links
    from aether_mcp.path_guard import SandboxRoot

    (made,) = links(SandboxRoot(Path(workspace).parent.parent), {"log_path": str(runs / "big.log"), "artifacts": {"gone": str(runs / "none.log")}})
    assert made.uri == "aether://workspaces/shipping_fee/file/.aether/runs/r1/big.log" and made.size == len(log) and made.name == "log_path"
    pages, uri = [], made.uri
    while uri is not None:
        text = (await _read_resource(client, uri)).text
        marker = re.search(r"\[([\d,]+) more characters: read (\S+\?offset=(\d+))\]\n\Z", text)
        pages.append(text if marker is None else text[: marker.start()])
        if marker is not None:
            assert len(pages[-1].encode()) <= PAGE_BYTES and int(marker[3]) == sum(map(len, pages)) == len(log) - int(marker[1].replace(",", ""))
        uri = None if marker is None else marker[2]
    assert "".join(pages) == log and len(pages) > len(log) // paging.chars_per_page(mirrored=False) >= 2

    bench = Path(workspace) / ".aether" / "bench" / "b1"
    bench.mkdir(parents=True)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    (bench / "benchmark.png").write_bytes(png)
    chart = await _read_resource(client, "aether://workspaces/shipping_fee/chart/.aether/bench/b1/benchmark.png")
    assert base64.b64decode(chart.blob) == png and chart.mime_type == "image/png"

    for uri, said in [
        ("aether://workspaces/shipping_fee/file/.aether/manifest.json", "is not an artifact"),
        ("aether://workspaces/shipping_fee/file/original/udf.py", "is not an artifact"),
        ("aether://workspaces/shipping_fee/file/.aether/runs/r1/nope.log", "does not exist"),
        ("aether://workspaces/nobody/file/.aether/runs/r1/big.log", "no workspace named 'nobody'"),
        ("aether://workspaces/shipping_fee/file/.aether/runs/../../../jobs/shipping.py", "Unknown resource"),
    ]:
        with pytest.raises(MCPError) as failed:
            await client.read_resource(uri)
        assert said in str(failed.value)
    assert (await _read_resource(client, "aether://workspaces/shipping_fee/file/.aether/runs/r1/big.log?offset=0")).text.startswith("row 0: \n")


@pytest.mark.slow
async def test_a_test_run_links_its_log_and_the_report_links_its_files(client):
    ws = await _new_workspace(client)
    result = await client.call_tool("run_tests", {"workspace": ws, "target": "original"})
    links = {block.name: block for block in result.content if block.type == "resource_link"}
    assert set(links) == {"log_path", "report_path"}
    log = await _read_resource(client, links["log_path"].uri)
    assert log.text == Path(result.structured_content["log_path"]).read_text(encoding="utf-8") and "5 passed" in log.text
    reported = await client.call_tool("report", {"workspace": ws})
    linked = {block.name for block in reported.content if block.type == "resource_link"}
    assert linked == {"artifacts.markdown", "artifacts.json"}


async def test_unknown_arguments_and_values_outside_the_schema_are_refused_by_name(client, workspace):
    text = await refused(client, "read_file", workspace=workspace, path="aether.toml", bogus=1)
    assert text.startswith("read_file refused its arguments: bogus: unknown argument.") and "It takes: workspace, path, offset?, start_line?" in text
    text = await refused(client, "byte_compare", workspace=workspace, candidate="fee", hidden_rows=-5, backend="tpu")
    assert "hidden_rows: Input should be greater than or equal to 0 (given -5)" in text and "backend: Input should be 'auto', 'cpu' or 'gpu'" in text
    assert "workspace: required" in await refused(client, "list_snapshots")
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    rows = listed["run_benchmark"].input_schema["properties"]["rows"]
    assert (rows["minimum"], rows["maximum"]) == (1, 50_000_000)
    assert all(tool.input_schema["additionalProperties"] is False for tool in listed.values())
    assert (await ok(client, "read_file", workspace=workspace, path="aether.toml"))["path"] == "aether.toml"  # still serving


async def test_an_unknown_tool_or_a_prompt_without_its_arguments_is_invalid_params(client):
    with pytest.raises(MCPError) as unknown:
        await client.call_tool("no_such_tool", {})
    assert unknown.value.code == -32602 and "Unknown tool 'no_such_tool'. The tools are: scan_project, init_workspace" in str(unknown.value)
    with pytest.raises(MCPError) as missing:
        await client.get_prompt("benchmark", {"workspace": "ws"})
    assert missing.value.code == -32602 and "missing candidate" in str(missing.value)
    with pytest.raises(MCPError) as unknown_prompt:
        await client.get_prompt("no_such_prompt", {})
    assert unknown_prompt.value.code == -32602
    assert (await client.get_prompt("benchmark", {"workspace": "ws", "candidate": "fee"})).messages  # and the server goes on


def _serve(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aether_mcp", "serve", *args], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)


def test_the_server_starts_only_with_an_explicit_root_that_is_not_slash_or_home(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "AETHER_MCP_ROOT"}
    no_root = _serve(env=env)
    assert no_root.returncode == 2 and "no root: pass --root <folder> (or set AETHER_MCP_ROOT)" in no_root.stderr
    slash = _serve("--root", "/", env=env)
    assert slash.returncode == 2 and "is the filesystem root" in slash.stderr
    home = tmp_path / "home"
    home.mkdir()
    at_home = _serve("--root", str(home), env={**env, "HOME": str(home)})
    assert at_home.returncode == 2 and "is your home folder; give the project folder inside it" in at_home.stderr
    with pytest.raises(ValueError, match="filesystem root"):
        build_server("/", warm_start=False)


def _imported_modules(importtime_log: Path) -> set[str]:
    """Top-level names of the modules a `python -X importtime` process has imported so far."""
    names = set()
    for line in importtime_log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.slow
async def test_tools_list_is_answered_before_spark_pandas_or_matplotlib_are_imported(root):
    log = root.path / "importtime.log"
    command = f"exec {sys.executable} -X importtime -m aether_mcp serve 2>{log}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", command], env={**os.environ, "AETHER_MCP_ROOT": str(root.path)})
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools[:2]] == ["scan_project", "init_workspace"]
        imported = _imported_modules(log)
        assert "mcp" in imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))
        # the first tool that needs them imports them then
        created = await client.call_tool("init_workspace", {"source": "jobs/shipping.py", "udf": "shipping_fee"})
        assert not created.is_error, created.content[0].text
        assert "pyspark" in _imported_modules(log)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes() or os.readlink(entry / "cwd").startswith(text):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def _new_workspace(client) -> str:
    created = await ok(client, "init_workspace", source="jobs/shipping.py", udf="shipping_fee")
    await ok(client, "write_file", workspace=created["workspace"], path="tests/cases.py", content=SHIPPING_CASES)
    return created["workspace"]


@pytest.mark.slow
async def test_a_background_run_is_started_polled_and_cancelled_and_the_next_call_works(client):
    ws = await _new_workspace(client)
    started = await ok(client, "start_run", tool="run_tests", arguments={"workspace": ws, "target": "original"})
    assert started["status"] == "running" and started["next"] == f"run_status({started['run_id']!r}, wait_s=30)"
    status = await ok(client, "run_status", run_id=started["run_id"], wait_s=60)
    while status["status"] == "running":
        status = await ok(client, "run_status", run_id=started["run_id"], wait_s=60)
    direct = await ok(client, "run_tests", workspace=ws, target="original")
    assert status["status"] == "succeeded" and status["result"]["passed"] == direct["passed"] == 5 and status["progress"]["total"]

    await ok(client, "write_file", workspace=ws, path="tests/test_hang.py", content="import time\n\ndef test_hang():\n    time.sleep(600)\n")
    hanging = await ok(client, "start_run", tool="run_tests", arguments={"workspace": ws, "target": "original"})
    with anyio.fail_after(60):
        while not _processes_mentioning(ws):
            await anyio.sleep(0.2)
    assert (await ok(client, "run_status", run_id=hanging["run_id"]))["status"] == "running"
    cancelled = await ok(client, "cancel_run", run_id=hanging["run_id"])
    assert cancelled["status"] == "cancelled" and cancelled["result"] is None
    with anyio.fail_after(30):
        while _processes_mentioning(ws):
            await anyio.sleep(0.5)
    await ok(client, "write_file", workspace=ws, path="tests/test_hang.py", content="def test_quick():\n    assert True\n")
    assert (await ok(client, "run_tests", workspace=ws, target="original"))["passed"] == 6

    assert "start_run takes one of" in await refused(client, "start_run", tool="write_file", arguments={})
    assert "run_tests refused its arguments: target: required" in await refused(client, "start_run", tool="run_tests", arguments={"workspace": ws})
    assert "no run 'run-nope'" in await refused(client, "run_status", run_id="run-nope")


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["coverage_report", "mutation_score"])
async def test_a_spec_tool_reports_rising_progress_through_the_protocol(client, tool):
    ws = await _new_workspace(client)
    counts = []

    async def on_progress(progress, total, message):
        counts.append((progress, total, message))

    result = await client.call_tool(tool, {"workspace": ws}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    said = [message for _, _, message in counts if "(still working: " not in message]  # not the repeats a slow step gets
    assert said[0].startswith("delivering the cases") and any(m.startswith("running ") for m in said)
    assert all(later[0] > earlier[0] for earlier, later in zip(counts, counts[1:])) and counts[-1][0] == counts[-1][1]


async def test_a_long_call_sends_a_note_at_least_every_5_seconds_saying_what_it_is_doing(client):
    ws = await _new_workspace(client)
    await ok(client, "write_file", workspace=ws, path="tests/test_slow.py", content="import time\n\n\ndef test_slow():\n    time.sleep(14)\n")
    notes = []

    async def on_progress(progress, total, message):
        notes.append((anyio.current_time(), progress, message))

    started = anyio.current_time()
    result = await client.call_tool("run_tests", {"workspace": ws, "target": "original"}, progress_callback=on_progress)
    ended = anyio.current_time()
    assert not result.is_error and result.structured_content["passed"] >= 1, result.content[0].text
    times = [started, *(at for at, _, _ in notes), ended]
    assert ended - started > 14 and max(later - earlier for earlier, later in zip(times, times[1:])) <= 5.0, times
    assert all(later[1] > earlier[1] for earlier, later in zip(notes, notes[1:]))  # repeats still rise
    repeats = [message for _, _, message in notes if "(still working: " in message]
    assert repeats and all(message.split(" (still working: ")[0] for message in repeats), repeats  # each says which step runs


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["coverage_report", "mutation_score"])
def test_cancelling_a_spec_tool_as_its_child_starts_stops_the_child_and_the_next_call_works(root, workers, workspace, tool):
    """The cancel event of the call reaches the coverage/mutation child through call_scope, with no parameter passed down."""
    import threading

    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp import call_scope
    from aether_mcp.tools import spec_strength

    measure = getattr(spec_strength, tool)
    cancel = threading.Event()

    def cancel_at_the_child(done, total, message):
        if message.startswith("running "):  # said just before the child process starts
            cancel.set()

    with call_scope.scope(cancel, cancel_at_the_child), pytest.raises(ToolError, match="was cancelled and its process stopped"):
        measure(root, workers, workspace)
    assert not _processes_mentioning(workspace)
    (run,) = (Path(workspace) / ".aether" / "runs").glob(f"*-{'coverage' if tool == 'coverage_report' else 'mutation'}-*")
    assert (run / "job.json").exists() and not (run / "result.json").exists()  # started, and stopped before it wrote a result
    assert measure(root, workers, workspace).workspace == workspace  # outside any call: nothing cancels it


def test_background_runs_refuse_what_they_cannot_do_and_say_what_to_call():
    import anyio as anyio_
    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp.background_runs import MAX_RUNNING, BackgroundRuns

    runs = BackgroundRuns()

    async def waits_until_cancelled():
        from aether_mcp import background_runs

        run = background_runs.current()
        while not run.cancel.is_set():
            await anyio_.sleep(0.01)
        raise ToolError("stopped")

    async def succeeds():
        from mcp_types import CallToolResult, TextContent

        return CallToolResult(content=[TextContent(type="text", text="{}")], structured_content={"answer": 42})

    done = runs.start("quick", {}, succeeds)
    assert runs.wait(done.run_id, 10).model_dump(include={"status", "result"}) == {"status": "succeeded", "result": {"answer": 42}}
    started = [runs.start("slow", {"n": n}, waits_until_cancelled) for n in range(MAX_RUNNING)]
    with pytest.raises(ToolError, match=f"{MAX_RUNNING} runs are still running .* cancel_run\\(run_id\\)"):
        runs.start("one too many", {}, succeeds)
    assert runs.wait(started[0].run_id, 0).status == "running"
    stopped = [runs.cancel(run.run_id) for run in started]
    assert [s.status for s in stopped] == ["cancelled"] * MAX_RUNNING and all(s.error == "stopped" for s in stopped)
    with pytest.raises(ToolError, match="no run 'run-nope' in this server process"):
        runs.cancel("run-nope")
    assert runs.start("quick", {}, succeeds).run_id  # room again once they ended


def test_progress_over_stages_that_each_count_from_zero_only_rises():
    from aether_mcp.progress_report import Monotonic, Stages

    sent = []
    guard = Monotonic(lambda done, total, message: sent.append((done, total, message)))
    for done, total in [(0, 5), (5, 5), (0, None), (3, 16), (2, 16), (16, 16)]:
        guard(done, total, "step")
    assert all(later[0] > earlier[0] for earlier, later in zip(sent, sent[1:]))
    assert all(total is None or total >= done for done, total, _ in sent) and sent[-1][1] == 16
    staged = []
    stages = Stages(lambda done, total, message: staged.append((done, total)), {"gate": 10, "rounds": 90})
    stages.stage("gate")(2, 2, "gate done")
    stages.stage("rounds")(0, None, "starting")
    stages.stage("rounds")(45, 90, "half way")
    stages.done()
    assert staged == [(10.0, 100.0), (10.0, 100.0), (55.0, 100.0), (100.0, 100.0)]


def test_the_registry_entry_matches_the_package_and_the_readme():
    import tomllib

    import aether_mcp

    repo = Path(__file__).resolve().parents[1]
    entry = json.loads((repo / "server.json").read_text())
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    assert entry["version"] == project["version"] == aether_mcp.__version__ == entry["packages"][0]["version"]
    assert entry["packages"][0]["identifier"] == project["name"] and len(entry["description"]) <= 100
    readme = (repo / "README.md").read_text()
    assert f"mcp-name: {entry['name']}" in readme
    install_page = (repo / "docs" / "install.md").read_text()
    arguments = entry["packages"][0]["packageArguments"]
    assert arguments[0]["value"] == "serve" and arguments[1]["name"] == "--root" and arguments[1]["isRequired"]
    # every variable listed is one the server reads and the install page's table explains
    source = "\n".join(path.read_text() for path in (repo / "aether_mcp").rglob("*.py"))
    for variable in entry["packages"][0]["environmentVariables"]:
        assert f'"{variable["name"]}"' in source and f"| `{variable['name']}` |" in install_page, variable["name"]


def _varying(schema) -> set[str]:
    """Names of the result fields a schema marks as differing between identical calls."""
    found = set()
    if isinstance(schema, dict):
        for name, sub in schema.get("properties", {}).items():
            if isinstance(sub, dict) and sub.get("x-varies") in ("timing", "run"):
                found.add(name)
        for value in schema.values():
            found |= _varying(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _varying(value)
    return found


def _without(value, names: set[str]):
    if isinstance(value, dict):
        return {key: _without(sub, names) for key, sub in value.items() if key not in names}
    if isinstance(value, list):
        return [_without(item, names) for item in value]
    return value


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_tool_called_twice_gives_the_same_result_but_for_fields_marked_as_varying_in_both_protocol_eras(root, workers, mode):
    async with Client(build_server(str(root.path), workers=workers, warm_start=False), mode=mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        ws = await _new_workspace(client)
        await ok(client, "snapshot", workspace=ws, label="cases")
        calls = {
            "workspace_status": {}, "list_files": {}, "read_file": {"path": "tests/cases.py"}, "list_snapshots": {}, "diff": {"from_id": 0},
            "run_tests": {"target": "original"}, "coverage_report": {}, "mutation_score": {}, "audit_tests": {}, "suggest_inputs": {}, "report": {},
        }
        for tool, arguments in calls.items():
            schema = json.loads((await client.read_resource(f"aether://schemas/{tool}")).contents[0].text)
            first = await ok(client, tool, workspace=ws, **arguments)
            second = await ok(client, tool, workspace=ws, **arguments)
            varying = _varying(schema)
            assert _without(first, varying) == _without(second, varying), tool
        assert {"duration_s", "run_id", "log_path"} <= _varying(json.loads((await client.read_resource("aether://schemas/run_tests")).contents[0].text))
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        assert unknown.value.code == -32602


def _many_branches_job(branches: int) -> str:
    body = "".join(f"    if code == {k}:\n        return {k * 7 + 3}\n" for k in range(branches))
    return f'from pyspark.sql.functions import udf\n\n\n@udf("int")\ndef tiered(code: int) -> int:\n{body}    return -1\n'


@pytest.mark.slow
async def test_coverage_and_mutation_list_at_most_a_hundred_items_and_count_the_rest_which_their_record_keeps(root, client):
    (root.path / "jobs" / "tiers.py").write_text(_many_branches_job(80), encoding="utf-8")
    ws = (await ok(client, "init_workspace", source="jobs/tiers.py", udf="tiered"))["workspace"]
    await ok(client, "record_cases", workspace=ws, inputs=[[0], [None]])
    coverage = await client.call_tool("coverage_report", {"workspace": ws})
    report = coverage.structured_content
    record = json.loads(Path(report["record_path"]).read_text(encoding="utf-8"))
    every = record["coverage"]["result"]["uncovered"]
    shown = len(report["uncovered"])  # at most 100, fewer when they would not fit the page's bytes
    assert 50 < shown <= 100 and report["uncovered_left_out"] == len(every) - shown > 50
    assert [u["item"] for u in report["uncovered"]] == [u["item"] for u in every[:shown]]
    assert f"{len(every)} uncovered and unexplained" in report["gate"]["detail"]  # judged on all of them
    assert "record_path" in {block.name for block in coverage.content if block.type == "resource_link"}

    await ok(client, "justify", workspace=ws, item=every[-1]["item"], reason="the last tier is tested elsewhere in the pipeline")
    again = await ok(client, "coverage_report", workspace=ws)
    assert again["uncovered"][-1]["justified"] is None  # the unjustified come first
    mutation = await ok(client, "mutation_score", workspace=ws)
    survivors = json.loads(Path(mutation["record_path"]).read_text(encoding="utf-8"))["mutation"]["result"]["survivors"]
    listed = len(mutation["survivors"])
    assert 0 < listed <= 100 and mutation["survivors_left_out"] == len(survivors) - listed > 0
    assert paging.wire_bytes(mutation["survivors"]) <= paging.PAGE_BYTES + 2 * listed  # each diff shown whole, as many as fit
    assert mutation["total"] - mutation["killed"] - mutation["invalid"] == len(survivors)


@pytest.mark.slow
async def test_no_result_on_a_bundled_example_is_longer_than_80k_characters(tmp_path, workers):
    import shutil

    from conftest import EXAMPLES

    shutil.copytree(EXAMPLES / "loyalty_pricing", tmp_path / "loyalty_pricing")
    sizes: dict[str, int] = {}
    async with Client(build_server(str(tmp_path), workers=workers, warm_start=False)) as client:

        async def call(tool, **arguments):
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text
            sizes[tool] = max(sizes.get(tool, 0), len(result.content[0].text))
            return result.structured_content

        ws = (await call("init_workspace", source="loyalty_pricing/job.py", udf="loyalty_discount"))["workspace"]
        folder = EXAMPLES / "loyalty_pricing"
        await call("write_file", workspace=ws, path="tests/cases.py", content=(folder / "cases.py").read_text())
        await call("write_file", workspace=ws, path="candidate/sql.py", content=(folder / "candidates" / "discount_sql.py").read_text())
        await call("write_file", workspace=ws, path="candidate/naive.py", content=(folder / "candidates" / "naive_sql.py").read_text())
        for target in ("original", "candidate:sql", "candidate:naive"):
            await call("run_tests", workspace=ws, target=target)
        for tool in ("coverage_report", "mutation_score", "suggest_inputs", "audit_tests", "workspace_status", "list_files", "list_snapshots"):
            await call(tool, workspace=ws)
        for name in ("sql", "naive"):
            await call("byte_compare", workspace=ws, candidate=name, hidden_rows=2_000)
            await call("audit_candidate", workspace=ws, candidate=name, hidden_rows=2_000)
        await call("read_file", workspace=ws, path="original/udf.py")
        await call("diff", workspace=ws, from_id=0)
        await call("report", workspace=ws)
    assert len(sizes) == 15 and max(sizes.values()) < 80_000, sizes


SPIN_JOB = '''from pyspark.sql.functions import udf


@udf("long")
def spin(n: int) -> int:
    if n is None:
        return None
    total = 0
    for k in range(min(abs(n), 200_000)):
        total += k % 7
    return total
'''
SPIN_CANDIDATE = 'TARGET = "sql"\n\n\ndef build(n):\n    return n.cast("long")\n'


async def _cancelled_midway(client, ws: str, tool: str, arguments: dict, *, marks: tuple[str, ...] = ()) -> None:
    """Start `tool` in the background, cancel it once it is under way (its first progress note came), and check that it
    stopped and left nothing: no process mentions the workspace (or `marks`, for a tool that works outside it), and the
    next call works."""
    call = arguments if tool == "scan_project" else {"workspace": ws, **arguments}
    started = await ok(client, "start_run", tool=tool, arguments=call)
    with anyio.fail_after(180):
        while (await ok(client, "run_status", run_id=started["run_id"]))["progress"] is None:
            await anyio.sleep(0.2)
    status = await ok(client, "run_status", run_id=started["run_id"])
    assert status["status"] == "running", (tool, status)  # still at work when cancelled
    cancelled = await ok(client, "cancel_run", run_id=started["run_id"])
    assert cancelled["status"] == "cancelled" and cancelled["result"] is None, (tool, cancelled)
    with anyio.fail_after(30):
        while any(_processes_mentioning(text) for text in (ws, *marks)):
            await anyio.sleep(0.5)
    after = await ok(client, "run_tests", workspace=ws, target="original")  # the next call works (a stopped worker is replaced)
    assert after["failed"] == after["errors"] == 0 and after["passed"] > 0, tool


@pytest.mark.slow
async def test_each_long_tool_started_in_the_background_can_be_cancelled_midway_and_leaves_no_process(root, client, tmp_path, monkeypatch):
    (root.path / "jobs" / "spin.py").write_text(SPIN_JOB, encoding="utf-8")
    ws = (await ok(client, "init_workspace", source="jobs/spin.py", udf="spin"))["workspace"]
    await ok(client, "record_cases", workspace=ws, inputs=[[None], [0], [1], [8], [-3], [250_000]])
    # each row costs the original about 10 ms: a thousand of them, or thousands of hidden rows, take seconds
    await _cancelled_midway(client, ws, "record_cases", {"inputs": [[200_000 + i] for i in range(1000)]})
    assert (await ok(client, "workspace_status", workspace=ws))["cases"] == 6  # nothing half-recorded
    await _cancelled_midway(client, ws, "suggest_inputs", {})

    assert (await ok(client, "coverage_report", workspace=ws))["gate"]["status"] == "pass"
    for survivor in (await ok(client, "mutation_score", workspace=ws))["survivors"]:
        await ok(client, "justify", workspace=ws, item=f"mutant:{survivor['mutant_id']}", reason="not told apart by these cases; fine for this test")
    await ok(client, "freeze_tests", workspace=ws)
    await ok(client, "write_file", workspace=ws, path="candidate/fast.py", content=SPIN_CANDIDATE)
    for tool, arguments in [
        ("generate_data", {"rows": 50_000_000}),
        ("byte_compare", {"candidate": "fast", "hidden_rows": 200_000}),
        ("audit_candidate", {"candidate": "fast", "hidden_rows": 200_000}),
        ("run_benchmark", {"candidate": "fast"}),
        ("try_optimization", {"candidate": "fast", "label": "first"}),
    ]:
        await _cancelled_midway(client, ws, tool, arguments)
    assert not list((Path(ws) / ".aether" / "data").glob("*.partial"))  # cancelled data generation keeps nothing

    # validate_on_data over the user's data: three Spark applications one after the other
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"n": pa.array([200_000 + i for i in range(2000)], pa.int64())}), root.path / "spins.parquet")
    await _cancelled_midway(client, ws, "validate_on_data", {"candidate": "fast", "data": "spins.parquet"})
    assert not list((Path(ws) / ".aether" / "validate").glob("*/result.json"))  # no verdict from a cancelled validation
    # scan_project times each UDF in a child process (about 0.3 s each) outside any workspace
    spins = "".join(f'\n\n@udf("long")\ndef spin_{k}(n: int) -> int:\n    return sum(k % 7 for k in range(min(abs(n or 0), 200_000)))\n' for k in range(24))
    (root.path / "spins").mkdir()
    (root.path / "spins" / "many.py").write_text(f"from pyspark.sql.functions import udf\n{spins}", encoding="utf-8")
    # its children work in temporary folders (aether-scan-*, aether-overhead-*): made under this test's own
    # folder here, so that what is looked for after the cancel is this scan's and never another run's
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    await _cancelled_midway(client, ws, "scan_project", {"path": "spins"}, marks=(str(scratch),))
    assert (await ok(client, "scan_project", path="spins"))["udfs_found"] == 24  # and a whole scan still works after it


@pytest.mark.slow
async def test_cancelling_a_direct_byte_compare_stops_its_spark_jobs_and_the_workers_serve_the_next_call_warm(root, workers):
    (root.path / "jobs" / "spin.py").write_text(SPIN_JOB, encoding="utf-8")
    async with Client(build_server(str(root.path), workers=workers, warm_start=False)) as client:
        ws = (await ok(client, "init_workspace", source="jobs/spin.py", udf="spin"))["workspace"]
        await ok(client, "record_cases", workspace=ws, inputs=[[None], [0], [1], [8], [-3], [250_000]])
        await ok(client, "write_file", workspace=ws, path="candidate/fast.py", content=SPIN_CANDIDATE)
        await ok(client, "byte_compare", workspace=ws, candidate="fast", hidden_rows=1_000)  # both workers up and warm
        starts = workers.starts
        evaluating = anyio.Event()

        async def on_progress(progress, total, message):
            if message.startswith("evaluating the original"):
                evaluating.set()

        async with anyio.create_task_group() as group:
            # each spinning row costs the original about 10 ms: 200,000 hidden rows keep its Spark job busy for minutes
            group.start_soon(partial(client.call_tool, "byte_compare", {"workspace": ws, "candidate": "fast", "hidden_rows": 200_000}, progress_callback=on_progress))
            with anyio.fail_after(120):
                await evaluating.wait()
            await anyio.sleep(3)  # the Spark job is running the original's Python on the rows
            group.cancel_scope.cancel()
        after = await ok(client, "byte_compare", workspace=ws, candidate="fast", hidden_rows=1_000)
        assert after["equal"] is not None and workers.starts == starts  # no worker was stopped or started

    # Only the server names and cancels requests: a test run holds the worker's token, not its control token.
    from aether_mcp.wire.worker_protocol import request
    from aether_mcp.workspace import Workspace

    handle = workers.get("reference", Workspace(root, Path(ws)).config.spark)
    refused_cancel = request(handle.socket_path, {"op": "cancel", "of": "any", "token": handle.token}, timeout_s=30)
    assert not refused_cancel["ok"] and "only the server" in refused_cancel["message"]
    assert request(handle.socket_path, {"op": "ping", "token": handle.token, "request_id": "named-by-a-test-run"}, timeout_s=30)["ok"]
    control = {"token": handle.token, "control": handle.control}
    assert request(handle.socket_path, {"op": "cancel", "of": "never-sent", "wait_s": "nan", **control}, timeout_s=30) == {"ok": True, "settled": True}
    assert workers.starts == starts
