"""nsys_profile: where a candidate's time goes, with the best profiler this machine has.

- `nsys`: on a GPU with Nsight Systems on the PATH, the candidate's micro-benchmark runs under
  `nsys profile` and the exported statistics are summarised (aether_mcp.parsers.nsys_report).
- `cpu`: otherwise, the same micro-benchmark under Python's profiler. It says plainly that no
  GPU profile was possible.
- `spark-plan`: a sql candidate runs in the JVM, where neither sees it; its executed plan is
  read instead (aether_mcp.confined.plan_profile).

Agent code runs only in child processes or the candidate worker, never in the server. Raw
reports stay on disk under .aether/profiles/<run>/ and come back as paths.
"""

from __future__ import annotations

import json
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import bench_data
from aether_mcp.backend import Resolved
from aether_mcp.parsers import nsys_report
from aether_mcp.parsers.nsys_report import CudaApiStat, KernelStat, NvtxRangeStat, TransferStat
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import confined_child, subprocess_runner
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.tools.benchmarking import _benchmarkable
from aether_mcp.workspace import Workspace, new_run_id
from aether_mcp.workspace.candidates import candidate_path

PROFILES_DIR = "profiles"
MAX_ROWS = 10_000_000
PLAN_ROWS = 1_000  # the plan does not depend on the data's size; the file only gives it a real scan
STEP_ROWS = 200_000  # rows each step is timed over: enough that a costly step shows above a Spark job's fixed cost
STEP_REPEATS = 3
MAX_HOTSPOTS = 15
# A function called this often per row is row-at-a-time Python, whatever its own cost.
PER_ROW_CALLS = 0.5
Progress = Callable[[int, int | None, str], None]


class Hotspot(BaseModel):
    function: str = Field(description="the function (cpu) or the repeated subexpression (spark-plan)")
    location: str = Field(description="file:line (cpu) or the plan operator (spark-plan)")
    cumulative_s: float | None = Field(None, description="seconds in it and what it calls (cpu)")
    own_s: float | None = Field(None, description="seconds in its own code (cpu)")
    calls: int = Field(description="calls (cpu) or copies in the evaluated plan (spark-plan)")
    calls_per_row: float | None = Field(None, description="calls / rows (cpu)")
    in_candidate: bool = Field(False, description="the candidate's own code (cpu)")
    hint: str | None = None


class ProfileResult(BaseModel):
    workspace: str
    candidate: str
    backend: Literal["nsys", "cpu", "spark-plan"]
    rows: int
    note: str = Field(description="what was profiled, and what could not be")
    wall_s: float | None = Field(description="seconds of one evaluate(*series) call without the profiler (nsys: mean per call)")
    hotspots: list[Hotspot]
    kernels: list[KernelStat] = Field(default_factory=list, description="nsys: the kernels with the most GPU time")
    kernel_launches: int | None = None
    transfers: dict[str, TransferStat] = Field(default_factory=dict, description="nsys: host_to_device and device_to_host bytes, time_s, count")
    nvtx_ranges: list[NvtxRangeStat] = Field(default_factory=list, description="nsys: NVTX ranges (cuDF annotates its calls)")
    cuda_api: list[CudaApiStat] = Field(default_factory=list, description="nsys: CUDA API calls with the most host time")
    gpu_share: float | None = Field(None, description="nsys: kernel time / wall time of the profiled process")
    codegen: dict[str, Any] | None = Field(None, description="spark-plan: operators in whole-stage codegen, coverage, expressions that fall back")
    plans: dict[str, str] | None = Field(None, description="spark-plan: the optimized and physical plans (also in artifacts)")
    steps: dict[str, Any] | None = Field(None, description="spark-plan, a build of (name, Column) steps: helpers (every step but the result), kept (still computed as columns of their own), inlined (merged by Spark into the expression that uses them), projections (Project operators in the executed plan)")
    step_seconds: dict[str, float] | None = Field(
        None,
        description="spark-plan, a build of (name, Column) steps: the seconds each step adds over step_rows rows, measured (median of every step up to it written out, "
        "less the same up to the step before; the first step less the arguments alone)",
    )
    step_rows: int | None = None
    hints: list[str]
    artifacts: dict[str, str] = Field(description="raw reports on disk")
    duration_s: float


def nsys_profile(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str,
    rows: int = 1_000_000,
    spec: dict[str, Any] | None = None,
    timeout_s: float = 1_800,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> ProfileResult:
    started = time.monotonic()
    opened, name, kind, resolved = _benchmarkable(root, workspace, candidate, action="profiled")
    if not 1 <= rows <= MAX_ROWS:
        raise ToolError(f"rows must be between 1 and {MAX_ROWS}.")
    report = progress or (lambda done, total, message: None)
    folder = opened.state_dir / PROFILES_DIR / new_run_id(name)
    folder.mkdir(parents=True)
    if kind == "sql":
        result = _spark_plan(opened, workers, name, folder, spec, cancel, report)
    else:
        data = bench_data.generate(opened, rows, None, spec, lambda done, total, message: report(0, None, message))
        if _on_gpu(resolved) and shutil.which("nsys"):
            result = _nsys(opened, name, folder, data.path, rows, timeout_s, cancel, report, resolved)
        else:
            result = _cpu(opened, name, folder, data.path, rows, timeout_s, cancel, report, resolved)
    result = result.model_copy(update={"duration_s": round(time.monotonic() - started, 3)})
    (folder / "profile.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    return result


def _on_gpu(resolved: Resolved) -> bool:
    return resolved.name == "gpu"


def _cpu(opened: Workspace, name: str, folder: Path, data: str, rows: int, timeout_s: float, cancel: threading.Event | None, report: Progress, resolved: Resolved) -> ProfileResult:
    report(0, None, f"profiling evaluate() on {rows} rows with Python's profiler")
    raw = _micro(opened, name, folder, data, {"profile": "cpu"}, timeout_s, cancel, resolved, keep=("profile.pstats", "profile.txt"))
    reason = resolved.note if not _on_gpu(resolved) else "nsys (Nsight Systems) is not on the PATH"
    hotspots = cpu_hotspots(raw["functions"], rows, raw["candidate_file"])
    return ProfileResult(
        workspace=str(opened.path),
        candidate=name,
        backend="cpu",
        rows=rows,
        note=f"No GPU profile was possible ({reason}): this is Python's profiler (cProfile) on the candidate's evaluate(*series) on the {raw.get('backend', 'cpu').upper()} backend, one call after a warm-up, without Spark.",
        wall_s=round(raw["wall_s"], 5),
        hotspots=hotspots,
        hints=cpu_hints(hotspots, raw["functions"]),
        artifacts={"pstats": str(folder / "profile.pstats"), "text": str(folder / "profile.txt"), "json": str(folder / "profile.json")},
        duration_s=0.0,
    )


def cpu_hotspots(functions: list[dict[str, Any]], rows: int, candidate_file: str) -> list[Hotspot]:
    """The functions with the most own time, profiler bookkeeping left out."""
    useful = [f for f in functions if "_lsprof" not in f["function"] and f["function"] != "<method 'disable' of '_lsprof.Profiler' objects>"]
    useful.sort(key=lambda f: (-f["own_s"], -f["cumulative_s"]))
    hotspots = []
    for function in useful[:MAX_HOTSPOTS]:
        per_row = function["calls"] / rows if rows else 0.0
        location = "built-in" if function["file"] == "~" else f"{_short_path(function['file'])}:{function['line']}"
        hotspots.append(
            Hotspot(
                function=function["function"],
                location=location,
                cumulative_s=round(function["cumulative_s"], 5),
                own_s=round(function["own_s"], 5),
                calls=function["calls"],
                calls_per_row=round(per_row, 4),
                in_candidate=function["file"] == candidate_file,
                hint=f"called {per_row:.2f} times per row: row-at-a-time Python; replace it with one whole-column operation" if per_row >= PER_ROW_CALLS else None,
            )
        )
    return hotspots


def cpu_hints(hotspots: list[Hotspot], functions: list[dict[str, Any]]) -> list[str]:
    hints = []
    # The candidate's own per-row function first: that is the code to change (a library's
    # element iterator it drives is the symptom, and which of the two costs more varies by run).
    per_row = sorted((h for h in hotspots if h.calls_per_row is not None and h.calls_per_row >= PER_ROW_CALLS), key=lambda h: not h.in_candidate)
    if per_row:
        hints.append(f"{per_row[0].function} ({per_row[0].location}) runs {per_row[0].calls_per_row:.2f} times per row: work done per element in Python. Vectorize it (NumPy ufuncs, pandas .str methods, pyarrow.compute); it will not move to a GPU as it is.")
    total = sum(f["own_s"] for f in functions) or 1.0
    object_strings = sum(f["own_s"] for f in functions if "object_array" in f["file"] or "lib.map_infer" in f["function"] or "map_infer" in f["function"])
    if object_strings / total > 0.2:
        hints.append(f"{object_strings / total:.0%} of the time is pandas string methods on Python objects (string[python]): pyarrow.compute kernels, or Series.astype('string[pyarrow]') first, run them in C, and cuDF runs the same .str calls on a GPU.")
    own = sum(f["own_s"] for f in functions if hotspots and any(h.in_candidate and h.function == f["function"] for h in hotspots))
    if own / total > 0.3:
        hints.append(f"{own / total:.0%} of the time is in the candidate's own Python lines, not in library kernels: look for loops, comprehensions or per-element branches there.")
    if hotspots and not per_row and not hints:
        top = hotspots[0]
        hints.append(f"the most own time is {top.function} ({top.location}, {top.own_s:.4f}s): start there; calls stay below one per row, so the work is already whole-column.")
    return hints


def _nsys(opened: Workspace, name: str, folder: Path, data: str, rows: int, timeout_s: float, cancel: threading.Event | None, report: Progress, resolved: Resolved) -> ProfileResult:
    report(0, None, f"profiling evaluate() on {rows} rows under nsys")
    output = folder / "profile"
    raw = _micro(
        opened, name, folder, data, {"profile": "nsys", "repeats": 3}, timeout_s, cancel, resolved,
        what="nsys profile", wrap=lambda argv: nsys_report.profile_command(output, argv), log_name="nsys_profile.log",
    )
    report_file = nsys_report.nsys_rep_path(output)
    if not report_file.is_file():
        raise ToolError(f"nsys profile wrote no report under {folder}; see {folder / 'nsys_profile.log'}.")
    prefix = folder / "stats"
    _run(opened, nsys_report.stats_command(report_file, prefix), folder, "nsys_stats.log", timeout_s, cancel, "nsys stats", resolved)
    # nsys totals cover every call in the process (warm-up included), so the share is over all of it
    summary = nsys_report.parse_reports(nsys_report.report_paths(prefix), raw["profiled_s"], int(raw["data_bytes"]), int(raw["result_bytes"]), rows)
    paths = {f"csv_{report_name}": str(path) for report_name, path in nsys_report.report_paths(prefix).items() if path.exists()}
    return ProfileResult(
        workspace=str(opened.path),
        candidate=name,
        backend="nsys",
        rows=rows,
        note="Nsight Systems trace (CUDA, NVTX, OS runtime) of the candidate's evaluate(*series), 3 calls after a warm-up, without Spark; each call is the NVTX range aether:evaluate.",
        wall_s=round(raw["wall_s"], 5),
        hotspots=[],
        kernels=summary.kernels,
        kernel_launches=summary.kernel_launches,
        transfers=summary.transfers,
        nvtx_ranges=summary.nvtx_ranges,
        cuda_api=summary.cuda_api,
        gpu_share=summary.gpu_share,
        hints=list(summary.hints) + [f"note: {note}" for note in summary.notes],
        artifacts={"nsys_report": str(report_file), **paths, "json": str(folder / "profile.json")},
        duration_s=0.0,
    )


def _spark_plan(opened: Workspace, workers: WorkerPool, name: str, folder: Path, spec: dict[str, Any] | None, cancel: threading.Event | None, report: Progress) -> ProfileResult:
    data = bench_data.generate(opened, PLAN_ROWS, None, spec, lambda done, total, message: report(0, None, message))
    report(0, None, "reading the candidate's Spark plan")
    try:
        profile = workers.plan(opened, f"candidate:{name}", data.path, cancel=cancel)
    except EvaluationFailed as exc:
        if exc.kind == "cancelled":
            raise ToolError("nsys_profile was cancelled; nothing is left running.") from None
        raise ToolError(f"the plan of candidate {name!r} could not be built: {exc}; run_tests shows the same problem.") from None
    step_seconds, untimed = _time_steps(opened, workers, name, spec, cancel, report) if profile.get("steps") else (None, "")
    (folder / "optimized_plan.txt").write_text(profile["optimized_plan"], encoding="utf-8")
    (folder / "physical_plan.txt").write_text(profile["physical_plan"], encoding="utf-8")
    codegen = profile["codegen"]
    hotspots = [
        Hotspot(
            function=item["expression"],
            location=item["operator"],
            calls=item["count"],
            hint=_repeat_hint(item),
        )
        for item in profile["repeated"]
    ]
    return ProfileResult(
        workspace=str(opened.path),
        candidate=name,
        backend="spark-plan",
        rows=PLAN_ROWS,
        note="A sql candidate runs in the JVM, where neither nsys nor a Python profiler sees it: this is its executed Spark plan over a Parquet scan, as run_benchmark runs it (the query is not run for the plan); a build of (name, Column) steps is also timed step by step (step_seconds).",
        wall_s=None,
        hotspots=hotspots,
        codegen=codegen,
        plans={"optimized": profile["optimized_plan"], "physical": profile["physical_plan"]},
        steps=profile.get("steps"),
        step_seconds=step_seconds,
        step_rows=STEP_ROWS if step_seconds is not None else None,
        hints=([untimed] if untimed else step_hints(step_seconds)) + plan_hints(codegen, hotspots, profile.get("steps")),
        artifacts={"optimized_plan": str(folder / "optimized_plan.txt"), "physical_plan": str(folder / "physical_plan.txt"), "json": str(folder / "profile.json")},
        duration_s=0.0,
    )


def _time_steps(opened: Workspace, workers: WorkerPool, name: str, spec: dict[str, Any] | None, cancel: threading.Event | None, report: Progress) -> tuple[dict[str, float] | None, str]:
    """What each step of a sql build adds, timed in the warm candidate worker over STEP_ROWS cached rows (see cached_timing),
    or None and why the steps could not be timed."""
    data = bench_data.generate(opened, STEP_ROWS, None, spec, lambda done, total, message: report(0, None, message))
    report(0, None, f"timing each step over {STEP_ROWS:,} cached rows, {STEP_REPEATS} runs")
    try:
        timed = workers.timing("candidate", opened, f"candidate:{name}", data.path, STEP_REPEATS, cancel=cancel, steps=True)
    except EvaluationFailed as exc:
        if exc.kind == "cancelled":
            raise ToolError("nsys_profile was cancelled; nothing is left running.") from None
        return None, f"the steps could not be timed over the generated data ({exc}); give spec the ranges the job's data keeps to (as for run_benchmark) to have them timed"
    return step_costs(timed["floor_seconds"], timed.get("step_seconds") or {}), ""


def step_costs(floor: list[float], cumulative: dict[str, list[float]]) -> dict[str, float]:
    """Per step, in order: the median of every step up to it, less the median up to the one before (the first: less the floor)."""
    costs, before = {}, statistics.median(floor)
    for step, seconds in cumulative.items():
        median = statistics.median(seconds)
        costs[step] = round(median - before, 4)
        before = median
    return costs


def step_hints(costs: dict[str, float] | None) -> list[str]:
    """The step that costs most, measured, when one clearly does."""
    if not costs:
        return []
    total = sum(max(0.0, c) for c in costs.values())
    step, most = max(costs.items(), key=lambda item: item[1])
    if total <= 0 or most < 0.5 * total or most < 0.01:
        return [f"no step stands out: measured over {STEP_ROWS:,} rows, the steps add {', '.join(f'{s} {c:+.3f}s' for s, c in costs.items())} (differences below a few hundredths of a second are noise)"]
    return [
        f"step {step!r} costs most: it adds {most:.3f}s of the {total:.3f}s the steps take over {STEP_ROWS:,} rows (measured: every step up to it written out, less the steps before it). "
        "Its functions are where to look first (a large translate table or regex character class, a function without generated code); change it through try_optimization, which keeps a change only on a measured gain."
    ]


def _repeat_hint(item: dict[str, Any]) -> str:
    """What a repeated subexpression is: a count of copies in the plan, never a measured cost."""
    copies = f"{item['count']} copies in the executed plan's {item['operator']} (a count in the plan, not a measurement)"
    if item["in_branches"]:
        return (
            f"{copies}, some inside CASE/IF/COALESCE branches, where Spark does not share them: each copy is evaluated when its branch is taken. "
            "A step that later steps use more than once stays a projection of its own; whether that is faster is not measured here: try_optimization keeps it only on a measured gain"
        )
    return f"{copies}, outside branches: Spark's subexpression elimination usually evaluates these once per row"


def plan_hints(codegen: dict[str, Any], hotspots: list[Hotspot], steps: dict[str, Any] | None = None) -> list[str]:
    hints = []
    outside = [o for o in codegen["outside_codegen"] if o not in ("FileSourceScanExec", "BatchScanExec")]
    if outside:
        hints.append(f"operators outside whole-stage codegen: {', '.join(outside)}; each row crosses an operator boundary there. A Python evaluation node (BatchEvalPython/ArrowEvalPython) here means a UDF is still in the plan.")
    if codegen["fallback_expressions"]:
        listed = ", ".join(f"{name} x{count}" for name, count in sorted(codegen["fallback_expressions"].items()))
        hints.append(f"expressions without generated code, evaluated interpreted: {listed}; a built-in function with code generation is faster where one gives the same result.")
    if steps and steps["inlined"]:
        hints.append(
            f"Spark merged the step(s) {', '.join(steps['inlined'])} into the expression that uses them (CollapseProject inlines a step used once, which copies no work); "
            f"kept as projections of their own: {', '.join(steps['kept']) or 'none'}. A step saves work only when later steps use it more than once."
        )
    in_branches = [h for h in hotspots if h.hint and "branches, where" in h.hint]
    if in_branches:
        hints.append(
            f"{len(in_branches)} subexpression(s) have copies inside CASE/IF branches (largest first in hotspots; counted in the plan, not timed). "
            "Computing one in an earlier step that later steps use more than once evaluates it once per row; it can also be slower (an extra projection), so change it through try_optimization, which keeps it only on a measured gain."
        )
    elif hotspots:
        hints.append("repeated subexpressions outside branches (counted in the plan) are usually shared by Spark's subexpression elimination: nothing to change for them unless try_optimization measures a gain.")
    if not hints:
        hints.append("the plan is compact: every operator but the scan is in whole-stage codegen and nothing appears twice.")
    return hints


def _micro(
    opened: Workspace, name: str, folder: Path, data: str, extra: dict[str, Any], timeout_s: float, cancel: threading.Event | None, resolved: Resolved,
    what: str = "the profiled process", **options: Any,
) -> dict[str, Any]:
    """The candidate's micro-benchmark child on `data` with `extra` settings; `options` go to confined_child.run."""
    child = confined_child.run(
        opened,
        "aether_mcp.confined.micro_bench",
        {**confined_child.sources(opened, f"candidate:{name}"), "data": data, **extra},
        folder=folder,
        result_name="micro.json",
        timeout_s=timeout_s,
        cancel=cancel,
        read=[data],
        env_extra=resolved.env(),
        **options,
    )
    _ended(child.ended, what)
    raw = _result(folder / "micro.json")
    raw["candidate_file"] = str(candidate_path(opened, f"candidate:{name}"))
    return raw


def _run(opened: Workspace, argv: list[str], folder: Path, log: str, timeout_s: float, cancel: threading.Event | None, what: str, resolved: Resolved) -> None:
    """nsys stats, which reads nsys's own report and runs no agent code."""
    ended = subprocess_runner.run(argv, cwd=folder, log_path=folder / log, timeout_s=timeout_s, env_extra=resolved.env(), cancel=cancel)
    _ended(ended, what)


def _ended(ended: subprocess_runner.ProcessResult, what: str) -> None:
    if ended.cancelled:
        raise ToolError(f"nsys_profile was cancelled; {what} was stopped and nothing is left running.")
    if ended.timed_out:
        raise ToolError(f"{what} did not finish within {ended.duration_s:.0f}s and was stopped; try fewer rows (log: {ended.log_path}).")
    if ended.returncode != 0:
        raise ToolError(f"{what} failed (exit {ended.returncode}): {ended.tail[-1200:]} (log: {ended.log_path})")


def _result(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ToolError(f"the profiled process wrote no result ({path}); see the logs next to it.") from None
    if raw.get("error"):
        raise ToolError(f"nsys_profile could not run the candidate: {raw['error']}; run_tests and byte_compare show where it fails.")
    return raw


def _short_path(file: str) -> str:
    """site-packages/pandas/core/x.py -> pandas/core/x.py; other paths as they are."""
    marker = "site-packages/"
    return file.split(marker, 1)[1] if marker in file else file
