"""nsys_profile: the CPU profile, the Spark-plan profile of sql candidates, and the nsys path.

This machine has no GPU, so the nsys path runs against a stand-in `nsys` executable that runs the
profiled command for real and then hands back recorded `nsys stats` CSV reports (the fixtures of
test_nsys_report): everything but Nsight Systems itself is the real code path.
"""

import os
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SQL_CANDIDATE, VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import conversion_report, profiling

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures" / "nsys"
SPEC = {"weight": {"min": 0.1, "max": 50.0}}

ROW_BY_ROW = textwrap.dedent(
    '''
    import pandas as pd

    TARGET = "vectorized"


    def fee_for(w, e):
        fee = 4.99 if w < 2.0 else 4.99 + (w - 2.0) * 1.5
        return fee * 2 if e else fee


    def evaluate(weight, express):
        return pd.Series(pd.array(list(map(fee_for, weight.fillna(1.0), express.fillna(False))), dtype="Float64"))
    '''
)

# The same fee computed in steps: `checked` is used in two CASE branches, once per row here.
STEPPED_SQL = textwrap.dedent(
    '''
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
        checked = F.when(weight <= 0, F.raise_error(F.lit("weight must be positive"))).otherwise(fee)
        return [
            ("_checked", checked),
            ("_out", F.when(weight.isNull(), F.lit(None).cast("double")).when(express, F.col("_checked") * 2).otherwise(F.col("_checked"))),
        ]
    '''
)


def _write(workspace: str, name: str, source: str) -> None:
    (Path(workspace) / "candidate" / f"{name}.py").write_text(source)


def test_cpu_profile_says_no_gpu_profile_was_possible_and_finds_the_candidate(root, workers, workspace):
    _write(workspace, "fee", VECTORIZED_CANDIDATE)
    result = profiling.nsys_profile(root, workers, workspace, "fee", rows=20_000, spec=SPEC)
    assert result.backend == "cpu" and result.note.startswith("No GPU profile was possible")
    assert result.rows == 20_000 and result.wall_s is not None and result.wall_s > 0
    assert all(h.calls_per_row is not None and h.calls_per_row < profiling.PER_ROW_CALLS for h in result.hotspots)
    text = Path(result.artifacts["text"]).read_text()
    assert Path(result.artifacts["pstats"]).is_file() and "function calls" in text and "candidate/fee.py:8(evaluate)" in text
    assert Path(result.artifacts["json"]).is_file() and result.hints


def test_cpu_profile_points_at_per_row_python(root, workers, workspace):
    _write(workspace, "rows", ROW_BY_ROW)
    result = profiling.nsys_profile(root, workers, workspace, "rows", rows=5_000, spec=SPEC)
    per_row = next(h for h in result.hotspots if h.function == "fee_for")
    assert per_row.in_candidate and per_row.calls == 5_000 and per_row.calls_per_row == 1.0
    assert "row-at-a-time" in per_row.hint
    assert result.hints[0].startswith("fee_for (") and "per row" in result.hints[0]


def _through_the_protocol(root, workers, tool: str, **arguments):
    import anyio
    from mcp import Client

    from aether_mcp.server import build_server

    async def call():
        async with Client(build_server(str(root.path), workers=workers, warm_start=False)) as client:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text
            return result.structured_content

    return anyio.run(call)


def test_spark_plan_profile_finds_a_value_copied_into_case_branches(root, workers, workspace):
    _write(workspace, "one", SQL_CANDIDATE)
    _write(workspace, "steps", STEPPED_SQL)
    one = profiling.nsys_profile(root, workers, workspace, "one")
    assert one.backend == "spark-plan" and "runs in the JVM" in one.note and one.wall_s is None
    assert one.codegen["coverage"] > 0 and one.codegen["outside_codegen"] == ["FileSourceScanExec"]
    copied = one.hotspots[0]
    assert copied.calls == 2 and "raise_error" in copied.function and "CASE/IF/COALESCE branches" in copied.hint
    assert "(a count in the plan, not a measurement)" in copied.hint and "try_optimization keeps it only on a measured gain" in copied.hint
    assert "Project" in copied.location and "steps" in one.hints[0] and "not timed" in one.hints[0] and one.steps is None
    assert Path(one.artifacts["physical_plan"]).read_text() == one.plans["physical"]

    # what each step costs, as an agent asks for it: through the MCP client
    steps = _through_the_protocol(root, workers, "nsys_profile", workspace=str(workspace), candidate="steps", spec={"weight": {"min": 0.1, "max": 50.0}})
    assert not any("raise_error" in h["function"] for h in steps["hotspots"])
    # each step timed as every step up to it written out (what it adds is measured; the numbers are not asserted)
    assert list(steps["step_seconds"]) == ["_checked", "_out"] and steps["step_rows"] == 200_000
    assert steps["hints"][0].startswith(("step '_checked' costs most", "step '_out' costs most", "no step stands out"))
    assert steps["codegen"]["operators"] > one.codegen["operators"]  # one projection per step
    assert steps["steps"] == {"helpers": ["_checked"], "kept": ["_checked"], "inlined": [], "projections": 2}  # used twice: kept

    # a step used once is merged back by Spark (CollapseProject), and the profile says so
    _write(workspace, "merged", STEPPED_SQL.replace('("_checked", checked)', '("_fee", fee), ("_checked", F.when(weight <= 0, F.raise_error(F.lit("weight must be positive"))).otherwise(F.col("_fee")))'))
    merged = profiling.nsys_profile(root, workers, workspace, "merged")
    assert merged.steps["inlined"] == ["_fee"] and merged.steps["kept"] == ["_checked"]
    assert any(h.startswith("Spark merged the step(s) _fee into the expression that uses them") for h in merged.hints)


def test_what_each_step_adds_is_the_difference_of_the_timed_runs_up_to_it_and_the_costliest_is_named():
    costs = profiling.step_costs([1.0, 1.1, 0.9], {"_clean": [1.2, 1.3, 1.2], "_lookup": [3.4, 3.0, 3.2], "_out": [3.2, 3.3, 3.25]})
    assert costs == {"_clean": 0.2, "_lookup": 2.0, "_out": 0.05}
    assert profiling.step_hints(costs)[0].startswith("step '_lookup' costs most: it adds 2.000s of the 2.250s")
    assert profiling.step_hints({"_a": 0.004, "_b": 0.003})[0].startswith("no step stands out")
    assert profiling.step_hints(None) == []


def test_spark_plan_profile_refuses_a_build_that_fails(root, workers, workspace):
    _write(workspace, "broken", "TARGET = 'sql'\n\ndef build(weight, express):\n    raise RuntimeError('not yet')\n")
    with pytest.raises(ToolError, match="could not be built.*not yet"):
        profiling.nsys_profile(root, workers, workspace, "broken")


def test_rows_out_of_range_are_refused(root, workers, workspace):
    _write(workspace, "fee", VECTORIZED_CANDIDATE)
    with pytest.raises(ToolError, match="rows must be between 1 and 10000000"):
        profiling.nsys_profile(root, workers, workspace, "fee", rows=0)


STAND_IN_NSYS = textwrap.dedent(
    '''
    #!{python}
    """Stands in for Nsight Systems: `profile` runs the command, `stats` copies recorded CSV reports."""
    import shutil, subprocess, sys
    from pathlib import Path

    args = sys.argv[1:]
    options = {{a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--") and "=" in a}}
    if args[0] == "profile":
        # nsys's own options come first; the command and its arguments (a "--" among them) after
        command = args[next(i for i, a in enumerate(args) if i > 0 and not a.startswith("--")):]
        code = subprocess.call(command)
        Path(options["--output"] + ".nsys-rep").write_bytes(b"recorded")
        sys.exit(code)
    if args[0] == "stats":
        assert options["--format"] == "csv" and Path(args[-1]).is_file()
        for report in options["--report"].split(","):
            source = Path("{fixtures}") / ("profile_" + report + ".csv")
            if source.exists():
                shutil.copy(source, options["--output"] + "_" + report + ".csv")
        sys.exit(0)
    sys.exit(2)
    '''
).lstrip()


def _stand_in_nsys(tmp_path: Path, scenario: str, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(STAND_IN_NSYS.format(python=sys.executable, fixtures=FIXTURES / scenario))
    nsys.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(profiling, "_on_gpu", lambda resolved: True)  # the child itself runs on the CPU backend


def test_nsys_path_runs_the_candidate_under_nsys_and_summarises_its_reports(root, workers, workspace, tmp_path, monkeypatch):
    _stand_in_nsys(tmp_path, "fused", monkeypatch)
    _write(workspace, "fee", VECTORIZED_CANDIDATE)
    result = profiling.nsys_profile(root, workers, workspace, "fee", rows=10_000, spec=SPEC)
    assert result.backend == "nsys" and result.hotspots == []
    assert result.kernels and result.kernels[0].share >= result.kernels[-1].share and result.kernel_launches > 0
    assert result.transfers["host_to_device"].bytes > 0 and result.nvtx_ranges
    assert result.gpu_share is not None and result.wall_s > 0  # the profiled process really ran the candidate
    assert Path(result.artifacts["nsys_report"]).read_bytes() == b"recorded"
    assert Path(result.artifacts["csv_cuda_gpu_kern_sum"]).read_text() == (FIXTURES / "fused" / "profile_cuda_gpu_kern_sum.csv").read_text()
    markdown = Path(conversion_report.report(root, workspace).artifacts["markdown"]).read_text()
    assert f"kernel: `{result.kernels[0].name[:120]}`" in markdown and "GPU busy" in markdown and "backend nsys" in markdown


def test_nsys_path_passes_on_the_parsers_hints(root, workers, workspace, tmp_path, monkeypatch):
    _stand_in_nsys(tmp_path, "tiny_kernels", monkeypatch)
    _write(workspace, "fee", VECTORIZED_CANDIDATE)
    result = profiling.nsys_profile(root, workers, workspace, "fee", rows=10_000, spec=SPEC)
    assert any(hint.startswith("fuse") for hint in result.hints)
