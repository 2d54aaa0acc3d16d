"""generate_data and run_benchmark: Spark benchmarks of the original vs a candidate vs the no-UDF floor.

A candidate must first pass byte_compare on a sample: speed of a wrong answer is not measured.
The timed runs happen in a separate Spark application (aether_mcp.confined.bench_runner); this
module checks the request, generates (or reuses) the data, runs it with progress and
cancellation, and turns raw seconds into medians, a bootstrap interval for the speedup, the
share of UDF overhead removed, a JSON record and a chart.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import bench_data, draws
from aether_mcp.backend import ALLOCATOR_POLICY, CPU, Resolved, gpu_problem
from aether_mcp.bench_data import GenerateDataResult
from aether_mcp.bench_stats import bootstrap_paired_ci, overhead_eliminated, paired_speedup
from aether_mcp.evaluation.pandas_forms import EMPTY_GROUP_TYPE
from aether_mcp.evaluation.spark_session import COMPILER_NOTE, compiler_note, timed_quick_jit
from aether_mcp.judge.raise_regions import RaiseRegions
from aether_mcp.lazy_import import lazy_module
from aether_mcp.nested_values import arrow_values
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import confined_child
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.progress_report import ChildProgress, Stages
from aether_mcp.spark_types import parse_type
from aether_mcp.tools import device_proof
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import passed_here_for
from aether_mcp.tools.device_proof import DeviceActivity
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace import Workspace, candidate_results, check_master, deviations, new_run_id
from aether_mcp.workspace.candidates import BadCandidate, candidate_path, check_target, declared_target

pq = lazy_module("pyarrow.parquet")

MODES = ("floor", "original", "original_arrow", "candidate")
BENCH_DIR = "bench"
GATE_HIDDEN_ROWS = 2_000
Progress = Callable[[int, int | None, str], None]

MICRO_ROWS = 100_000
MICRO_SQL_ROWS = 200_000
DEFAULT_PRECISION = 0.10
MAX_EXTRA_BUDGET_S = 3_600
AUTO_BUDGET_CAP_S = 60.0
# A call with the default rows stays under about 2 minutes on 2 cores; more rows (or start_run) for larger jobs.
DEFAULT_ROWS = 200_000
MAX_ROUNDS = 50  # run_benchmark adds rounds until the interval is within +/- this of the speedup

class ModeResult(BaseModel):
    mode: str
    runs: int
    median_s: float
    min_s: float
    max_s: float
    cv: float = Field(description="coefficient of variation of the runs (stdev / mean)")
    rows_per_s: float
    python_s: dict[str, float] = Field(default_factory=dict, description="median seconds Spark's SQL metrics give Python per run (e.g. 'time to execute Python code'); empty where Spark reports none")


class FailedMode(BaseModel):
    mode: str
    error: str


class RunBenchmarkResult(BaseModel):
    workspace: str
    candidate: str
    rows: int
    repeats: int = Field(description="timed rounds run: at least the repeats asked for, more while the interval was too wide and time was left")
    warmup: int
    modes: list[ModeResult]
    failed: list[FailedMode] = Field(description="modes that could not run, with their errors; the others still ran")
    speedup: float | None = Field(description="median over rounds of original seconds / candidate seconds in the same round")
    speedup_ci: list[float] | None = Field(description="95% bootstrap interval [low, high] of the speedup, resampling rounds")
    ratio_of_medians: float | None = Field(description="original median / candidate median, the bars of the chart")
    overhead_eliminated: float | None = Field(description="(original - candidate) / (original - floor), from medians; above 1, see overhead_note")
    overhead_note: str = Field("", description="set when overhead_eliminated is above 1: the candidate timed faster than the job with no UDF at all")
    rounds_ended_by: str = Field("", description="why the timed rounds stopped: precision (the interval's half-width reached the target), budget (time_budget_s ran out), max_repeats, or a failure")
    gate: str = Field(description="the byte_compare the candidate passed before any timing")
    backend: Literal["cpu", "gpu"] = Field(description="where the candidate ran: the GPU backend (cuDF/CuPy, native kernels) or the CPU one")
    simulated: bool = Field(False, description="never true here: simulated kernels are refused")
    gpu_verified: bool = Field(description="device activity was recorded and showed the work on the GPU; false on the CPU backend")
    backend_note: str
    device_activity: DeviceActivity | None = Field(None, description="GPU backend with nsys: kernel launches and host/device copies of the candidate")
    output_check: str = Field("", description="whether the candidate's output over the whole benchmark data equals the original's, checked in the same application")
    confined: bool = Field(False, description="the benchmark application ran confined (it read only the data and the Python environment, wrote only its scratch)")
    confinement: str = Field("", description="how, or why not")
    data: str
    data_spec: dict[str, dict[str, Any]] = Field(default_factory=dict, description="the settings the benchmark data was drawn with (generate_data's spec_used)")
    data_spec_from: list[str] = Field(default_factory=list, description="why each setting not given in spec was chosen")
    environment: dict[str, Any] = Field(description="where the rounds ran: Spark and Java versions, master, cores, CPU, memory, the confs that shape a run, and jvm_compiler: " + COMPILER_NOTE)
    artifacts: dict[str, str] = Field(description="json: the full result with every run's seconds; chart: a PNG of the modes")
    duration_s: float


def generate_data(root: SandboxRoot, workspace: str, rows: int, seed: int | None = None, spec: dict[str, Any] | None = None, progress: Progress | None = None) -> GenerateDataResult:
    opened = Workspace.open_intact(root, workspace)
    return bench_data.generate(opened, rows, seed, spec, progress)


@draws.recorded_call("run_benchmark")
def run_benchmark(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str,
    rows: int = DEFAULT_ROWS,
    repeats: int = 5,
    warmup: int = 1,
    modes: list[str] | None = None,
    master: str | None = None,
    spec: dict[str, Any] | None = None,
    timeout_s: float = 3_600,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    backend: str | None = None,
    precision: float = DEFAULT_PRECISION,
    time_budget_s: float | None = None,
) -> RunBenchmarkResult:
    """Times the modes in one Spark application, rounds interleaved. After `repeats` rounds it adds rounds while the
    speedup's 95% interval is wider than +/- `precision` of the speedup, for at most `time_budget_s` more seconds
    (default: as long again as the first rounds took, at most 60 s; 0: no extra rounds) and 50 rounds in all."""
    started = time.monotonic()
    opened, name, _kind, resolved = _benchmarkable(root, workspace, candidate, master, backend)
    passed_here_for(opened, name, master or opened.config.benchmark.master or opened.config.spark.master, "run_benchmark")
    chosen = _checked(modes, rows, repeats, warmup, timeout_s)
    if not 0.0 < precision <= 1.0 or (time_budget_s is not None and not 0 <= time_budget_s <= MAX_EXTRA_BUDGET_S):
        raise ToolError(f"precision must be in (0, 1] (0.1: the interval within +/-10% of the speedup) and time_budget_s between 0 and {MAX_EXTRA_BUDGET_S}.")
    # one count over the stages: the gate's comparison, the data, the pre-check, the timed rounds, the device proof
    stages = Stages(progress or (lambda done, total, message: None), {"gate": 10, "data": 10, "precheck": 5, "rounds": 100, "device": 5})
    gate_text = _gate(root, workers, workspace, name, cancel, stages.stage("gate"), resolved)
    report_data = stages.stage("data")
    data = bench_data.generate(opened, rows, None, spec, lambda done, total, message: report_data(done, total, message))
    _precheck(opened, workers, data, cancel, stages.stage("precheck"))
    report = stages.stage("rounds")
    settings: dict[str, Any] = {"modes": chosen, "repeats": repeats, "warmup": warmup}
    if "original" in chosen and "candidate" in chosen:
        settings["precision"] = precision_request(("original", "candidate"), precision, time_budget_s)
    folder, raw = _run_application(opened, f"candidate:{name}", data.path, settings, master, timeout_s, cancel, report, resolved)
    wrong = _output_mismatch(raw)
    if wrong:
        raise ToolError(f"candidate {name!r} is wrong at benchmark scale: {wrong} (raw result: {folder / 'raw.json'}); its speed is not reported. byte_compare with more hidden_rows, or a spec closer to this data, shows where.")
    activity, verified, proof_note = device_proof.prove(opened, name, resolved, timeout_s, cancel, stages.stage("device"))

    measured = [_mode_result(mode, seconds, rows, raw.get("python_metrics", {}).get(mode, [])) for mode, seconds in raw["runs"].items() if seconds]
    by_mode = {m.mode: m for m in measured}
    speedup = speedup_ci = overhead = ratio_of_medians = None
    overhead_note = ""
    if "original" in by_mode and "candidate" in by_mode:
        # Rounds are interleaved, so a slow spell of the machine hits both runs of a round: the
        # per-round ratio cancels it, where the ratio of two medians taken from different rounds
        # does not (on the same raw runs, two suite runs differed by 6-12% this way, up to 19% as a
        # ratio of medians).
        speedup = paired_speedup(raw["runs"]["original"], raw["runs"]["candidate"])
        speedup_ci = bootstrap_paired_ci(raw["runs"]["original"], raw["runs"]["candidate"])
        ratio_of_medians = round(by_mode["original"].median_s / by_mode["candidate"].median_s, 3)
        overhead, overhead_note = overhead_eliminated(by_mode["original"].median_s, by_mode["candidate"].median_s, by_mode["floor"].median_s if "floor" in by_mode else None)
    result = RunBenchmarkResult(
        workspace=str(opened.path),
        candidate=name,
        rows=rows,
        repeats=max((m.runs for m in measured), default=repeats),
        warmup=warmup,
        modes=measured,
        rounds_ended_by=_ended_text(raw),
        failed=[FailedMode(mode=mode, error=error) for mode, error in raw["failed"].items()],
        speedup=speedup,
        speedup_ci=speedup_ci,
        ratio_of_medians=ratio_of_medians,
        overhead_eliminated=overhead,
        overhead_note=overhead_note,
        gate=gate_text,
        backend=resolved.name,  # type: ignore[arg-type]
        simulated=resolved.simulated,
        gpu_verified=verified,
        backend_note=f"{resolved.note}; {proof_note}",
        device_activity=activity,
        output_check=_output_note(raw),
        confined=bool(raw.get("confined")),
        confinement=str(raw.get("confinement", "")),
        data=data.path,
        data_spec=data.spec_used,
        data_spec_from=data.spec_from,
        environment={
            **raw["environment"],
            "backend": resolved.name,
            **({"allocator": ALLOCATOR_POLICY} if resolved.name == "gpu" else {}),
            "deviations": [d.describe() for d in deviations.load(opened, name)],
        },
        artifacts={"json": str(folder / "benchmark.json"), "chart": str(folder / "benchmark.png")},
        duration_s=round(time.monotonic() - started, 3),
    )
    chart(result, raw["runs"], folder / "benchmark.png")
    # the candidate's digest lets the report tell a benchmark of the current file from a stale one
    digest = hashlib.sha256(candidate_path(opened, f"candidate:{name}").read_bytes()).hexdigest()
    (folder / "benchmark.json").write_text(json.dumps({**result.model_dump(), "candidate_digest": digest, "raw_seconds": raw["runs"], "order": raw["order"]}, indent=2), encoding="utf-8")
    stages.done()
    return result


def precision_request(pair: tuple[str, str], precision: float, time_budget_s: float | None, threshold: float | None = None) -> dict[str, Any]:
    """What the benchmark application needs to add rounds until the speedup of pair[0] over pair[1] is known to +/- `precision`
    (with `threshold`: until its interval lies wholly above or below it, as a decision needs).

    budget_s None: the application gives the extra rounds as long as the asked-for ones took, at most AUTO_BUDGET_CAP_S."""
    return {"pair": list(pair), "half_width": precision, "budget_s": time_budget_s, "auto_cap_s": AUTO_BUDGET_CAP_S, "max_repeats": MAX_ROUNDS, "threshold": threshold}


def _ended_text(raw: dict[str, Any]) -> str:
    ended = raw.get("rounds_ended_by") or {}
    return f"{ended.get('by', 'repeats')}: {ended.get('detail', 'the rounds asked for')}"


PRECHECK_ROWS = 2_000


def _precheck(opened: Workspace, workers: WorkerPool, data: GenerateDataResult, cancel: threading.Event | None, report: Progress) -> None:
    """Refuses, in seconds, benchmark data the original raises on: its mode would fail the job after minutes."""
    report(0, None, f"checking the original on {PRECHECK_ROWS} rows of the benchmark data")
    names = [a.name for a in opened.config.udf.args]
    parquet = pq.ParquetFile(data.path)
    table = parquet.read_row_group(0, columns=names).slice(0, PRECHECK_ROWS)
    rows = [list(row) for row in zip(*[arrow_values(table.column(name)) for name in names])]
    try:
        outputs = workers.evaluate("reference", opened, "original", rows, cancel=cancel).outputs
    except EvaluationFailed as exc:
        raise ToolError(f"the original could not be evaluated on the benchmark data ({exc}); run_tests(workspace, 'original') shows the same problem in context.") from None
    # an aggregation's row with no values makes no group: nothing runs on it, nothing fails
    raised = [i for i, output in enumerate(outputs) if isinstance(output, Raised) and output.type != EMPTY_GROUP_TYPE]
    if not raised:
        return
    regions = RaiseRegions(rows, outputs)
    used = {name: dict(settings) for name, settings in data.spec_used.items() if settings}
    suggested = {name: dict(settings) for name, settings in used.items()}  # a spec is suggested only when it changes what the data holds
    for learned in regions.learned:
        settings, _ = bench_data.avoiding(parse_type(opened.config.udf.args[learned.position].type), {learned.feature: ""})
        suggested.setdefault(names[learned.position], {}).update(settings)
    example = raised[0]
    suggested = {name: settings for name, settings in suggested.items() if settings}
    advice = (
        f"run it again with spec={json.dumps(suggested, sort_keys=True)} ({'; '.join(regions.describe(names))})"
        if regions.learned and suggested != used
        else "pass a spec whose null_rate, min/max or values keep to inputs the original returns on (byte_compare's original_raised shows them)"
    )
    raise ToolError(
        f"the original raises on {len(raised)} of {len(rows)} sampled rows of the benchmark data (e.g. args {[repr(v) for v in rows[example]]}: "
        f"{outputs[example]}), so its mode would fail the job and nothing could be compared; {advice}. The data was drawn with "
        f"spec {json.dumps(data.spec_used, sort_keys=True)}."
    )


def _benchmarkable(
    root: SandboxRoot, workspace: str, candidate: str, master: str | None = None, backend: str | None = None, action: str = "timed"
) -> tuple[Workspace, str, str, Resolved]:
    """The workspace, the candidate's name, its target kind and the backend it runs on; kernels need a real GPU."""
    if master is not None:
        try:
            check_master(master, "master")
        except ValueError as exc:
            raise ToolError(f"{exc}; or leave it out to use aether.toml's [benchmark] master (default local[*]).") from None
    opened = Workspace.open_intact(root, workspace)
    target = check_target(opened, candidate if candidate.startswith("candidate:") else f"candidate:{candidate}")
    name = target.removeprefix("candidate:")
    try:
        kind = declared_target(candidate_path(opened, target).read_text(encoding="utf-8"), name)
    except BadCandidate as exc:
        raise ToolError(f"{exc}; fix the candidate (run_tests shows the same problem) and benchmark again.") from None
    resolved = device_proof.choose(opened, target, backend)
    if resolved.simulated:
        why = gpu_problem("kernel") or "the CPU backend was chosen"
        raise ToolError(
            f"a kernel candidate would run under numba's CUDA simulator here ({why}), which measures nothing about GPU speed, so it is not {action}. "
            "Run this with backend='gpu' on a machine with an NVIDIA GPU; run_tests and byte_compare check it here."
        )
    return opened, name, kind, resolved


def _gate(root: SandboxRoot, workers: WorkerPool, workspace: str, name: str, cancel: threading.Event | None, report: Progress, resolved: Resolved | None = None) -> str:
    """Refuses a candidate that byte_compare does not find equal on a sample (on the backend it is timed on); what it passed, otherwise."""
    report(0, None, f"byte_compare on {GATE_HIDDEN_ROWS} hidden rows before timing anything")
    gate = byte_compare(root, workers, workspace, name, hidden_rows=GATE_HIDDEN_ROWS, cancel=cancel, backend=resolved.name if resolved else None, prove_device=False)
    if not gate.equal:
        why = gate.error or (gate.evidence.note if gate.equal is None else f"{sum(s.mismatched for s in gate.sources)} mismatching rows") + (f"; {'; '.join(gate.contract_problems)}" if gate.contract_problems else "")
        raise ToolError(f"candidate {name!r} does not pass byte_compare ({why}; see {gate.result_path}); speed of a wrong answer is not measured. Fix it, or record_deviation for a difference you keep, then benchmark again.")
    return f"byte_compare equal on {gate.rows_compared} rows" + (f" with deviations: {'; '.join(gate.policy.declared_deviations)}" if gate.policy.declared_deviations else "")


def _run_application(
    opened: Workspace,
    target: str,
    data: str,
    plan: dict[str, Any],
    master: str | None,
    timeout_s: float,
    cancel: threading.Event | None,
    report: Progress,
    resolved: Resolved | None = None,
    best: Path | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Run the benchmark's own Spark application on `plan`, confined; (its folder, its raw result).

    `best`: a folder holding another version's candidate/ files (try_optimization's best so far). The request's quick_jit: TIMED_JIT_ENV."""
    chosen = master or opened.config.benchmark.master or opened.config.spark.master
    pinned = passed_here_for(opened, target.removeprefix("candidate:"), chosen, "the benchmark")
    try:
        given = confined_child.sources(opened, target, best, pinned=pinned, best_passed=lambda digest: candidate_results.passed_bytes(opened, target.removeprefix("candidate:"), digest))
    except confined_child.ChangedSinceAudit as exc:
        raise ToolError(f"{exc}; nothing ran on {chosen}. {exc.next_step}") from None
    folder = _new_run_folder(opened)
    request = {**given, "data": data, "master": chosen, "seed": draws.seed("benchmark.order", bits=32), **plan, "quick_jit": timed_quick_jit(chosen)}
    poll = ChildProgress(lambda step: report(int(step["done"]), int(step["total"]) or None, str(step["message"])))
    raw = _run_child(opened, "aether_mcp.confined.bench_runner", folder, request, "raw.json", data, timeout_s, cancel, poll, "the benchmark's Spark application", resolved)
    return folder, raw


def _new_run_folder(opened: Workspace) -> Path:
    run_id = new_run_id()
    folder = opened.state_dir / BENCH_DIR / run_id
    folder.mkdir(parents=True)
    return folder


def _run_child(
    opened: Workspace,
    module: str,
    folder: Path,
    request: dict[str, Any],
    result_name: str,
    data: str,
    timeout_s: float,
    cancel: threading.Event | None,
    poll: Callable[[Path], None] | None,
    what: str,
    resolved: Resolved | None = None,
) -> dict[str, Any]:
    """Run `python -m module REQUEST` confined (aether_mcp.processes.confined_child); the JSON it wrote, with how it was confined."""
    child = confined_child.run(
        opened, module, request, folder=folder, result_name=result_name, timeout_s=timeout_s, cancel=cancel, read=[data], env_extra=(resolved or CPU).env(), poll=poll
    )
    ended = child.ended
    if ended.cancelled:
        raise ToolError(f"the benchmark was cancelled; {what} was stopped and nothing is left running.")
    if ended.timed_out:
        raise ToolError(f"the benchmark did not finish within {timeout_s:.0f}s and {what} was stopped; try fewer rows or repeats (log: {ended.log_path}).")
    if child.raw is None:
        raise ToolError(f"{what} failed (exit {ended.returncode}): {ended.tail[-1500:]} (log: {ended.log_path})")
    return {**child.raw, "confined": child.confinement.confined, "confinement": child.confinement.how}


def _output_mismatch(raw: dict[str, Any]) -> str | None:
    """Why the candidate's output over the benchmark data is refused, or None when it matched (or could not be checked)."""
    check = raw.get("output_check") or {}
    if check.get("checked") and check.get("mismatched"):
        return f"{check['mismatched']:,} of {check['rows']:,} rows of the benchmark data differ from the {check['against']} mode's output"
    return None


def _output_note(raw: dict[str, Any]) -> str:
    check = raw.get("output_check") or {}
    if check.get("checked"):
        return f"the candidate's output over all {check['rows']:,} rows equals the {check['against']}'s (hashes of every row compared in Spark)"
    return f"not checked: {check.get('reason', 'no check ran')}"


def _checked(modes: list[str] | None, rows: int, repeats: int, warmup: int, timeout_s: float) -> list[str]:
    chosen = list(MODES) if modes is None else list(dict.fromkeys(modes))
    unknown = [m for m in chosen if m not in MODES]
    if unknown or not chosen:
        raise ToolError(f"modes may be any of {', '.join(MODES)} (got {', '.join(unknown) or 'none'}).")
    if not 1 <= rows <= bench_data.MAX_ROWS:
        raise ToolError(f"rows must be between 1 and {bench_data.MAX_ROWS}.")
    if not 1 <= repeats <= 50 or not 0 <= warmup <= 10:
        raise ToolError("repeats must be between 1 and 50, warmup between 0 and 10.")
    if not 10 <= timeout_s <= 6 * 3600:
        raise ToolError("timeout_s must be between 10 and 21600.")
    return chosen


def _mode_result(mode: str, seconds: list[float], rows: int, python: list[dict[str, float]] | None = None) -> ModeResult:
    mean = statistics.fmean(seconds)
    names = sorted({name for run in python or [] for name in run})
    python_s = {name: round(statistics.median(run.get(name, 0.0) for run in python or []), 4) for name in names}
    median = statistics.median(seconds)
    return ModeResult(
        mode=mode,
        runs=len(seconds),
        median_s=round(median, 4),
        min_s=round(min(seconds), 4),
        max_s=round(max(seconds), 4),
        cv=round(statistics.pstdev(seconds) / mean, 4) if mean > 0 else 0.0,
        rows_per_s=round(rows / median, 1) if median > 0 else math.inf,
        python_s=python_s,
    )


def chart(result: RunBenchmarkResult, runs: dict[str, list[float]], path: Path) -> None:
    """Bars of the median seconds per mode, whiskers from the fastest to the slowest run, every run as a dot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"floor": "#9e9e9e", "original": "#d95f02", "original_arrow": "#e6ab02", "candidate": "#1b9e77"}
    modes = list(result.modes)
    figure, axes = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    positions = range(len(modes))
    medians = [m.median_s for m in modes]
    below = [m.median_s - m.min_s for m in modes]
    above = [m.max_s - m.median_s for m in modes]
    axes.bar(positions, medians, color=[colours.get(m.mode, "#7570b3") for m in modes], yerr=[below, above], capsize=6, width=0.6)
    for position, mode in zip(positions, modes):
        seconds = runs[mode.mode]
        axes.scatter([position] * len(seconds), seconds, color="black", s=10, zorder=3)
        axes.annotate(f"{mode.median_s:.2f}s", (position, mode.max_s), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=9)
    axes.set_xticks(list(positions), [m.mode.replace("_", "\n") for m in modes])
    axes.set_ylabel("seconds per run (median, min-max, every run)")
    title = f"{result.candidate} vs the original UDF, {result.rows:,} rows, {result.repeats} runs each"
    if result.speedup is not None and result.speedup_ci is not None:
        title += f"\nspeedup {result.speedup:.2f}x (95% CI {result.speedup_ci[0]:.2f}-{result.speedup_ci[1]:.2f})"
        if result.speedup < 1:
            title += ": the candidate is slower than the original"
        elif result.overhead_eliminated is not None:
            title += f", {result.overhead_eliminated:.0%} of the UDF overhead removed"
    axes.set_title(title, fontsize=10)
    environment = result.environment
    figure.text(0.01, 0.01, f"Spark {environment.get('spark_version')} {environment.get('master')}, {environment.get('cpu_count')} cores, {environment.get('cpu')}", fontsize=7, color="#555555")
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path)
    plt.close(figure)


ARROW_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
DEFAULT_SIZES = (1_000, 10_000, 50_000, 100_000, 500_000)


class BatchPoint(BaseModel):
    target: str = Field(description="candidate, or original for a pandas UDF original")
    max_records_per_batch: int
    median_s: float
    min_s: float
    max_s: float
    peak_worker_mib: float = Field(description="peak resident memory of the Python workers during the runs")


class TuneArrowBatchResult(BaseModel):
    workspace: str
    candidate: str
    rows: int
    points: list[BatchPoint]
    failed: list[FailedMode]
    best: dict[str, int] = Field(description="fastest batch size per target")
    recommendation: str
    gate: str
    confined: bool = Field(False, description="the benchmark application ran confined")
    confinement: str = Field("", description="how, or why not")
    artifacts: dict[str, str]
    duration_s: float


@draws.recorded_call("tune_arrow_batch")
def tune_arrow_batch(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str,
    sizes: list[int] | None = None,
    rows: int = DEFAULT_ROWS,
    repeats: int = 3,
    master: str | None = None,
    spec: dict[str, Any] | None = None,
    timeout_s: float = 3_600,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> TuneArrowBatchResult:
    started = time.monotonic()
    opened, name, kind, resolved = _benchmarkable(root, workspace, candidate, master)
    passed_here_for(opened, name, master or opened.config.benchmark.master or opened.config.spark.master, "tune_arrow_batch")
    if kind == "sql":
        raise ToolError("a sql candidate runs in the JVM and never sees Arrow batches; tune_arrow_batch is for vectorized candidates (use run_benchmark for sql).")
    chosen = sorted(set(sizes or DEFAULT_SIZES))
    if not 1 <= len(chosen) <= 12 or not all(isinstance(size, int) and 1 <= size <= 10_000_000 for size in chosen):
        raise ToolError("sizes must be 1 to 12 batch sizes between 1 and 10000000 rows, e.g. [1000, 10000, 100000].")
    _checked(None, rows, repeats, 1, timeout_s)
    report = progress or (lambda done, total, message: None)
    gate_text = _gate(root, workers, workspace, name, cancel, report, resolved)
    data = bench_data.generate(opened, rows, None, spec, lambda done, total, message: report(0, None, message))
    targets = ["candidate"] + (["original"] if opened.config.udf.kind == "pandas" else [])
    variants = [{"label": f"{target}@{size}", "mode": target, "conf": {ARROW_BATCH_CONF: size}} for target in targets for size in chosen]
    folder, raw = _run_application(opened, f"candidate:{name}", data.path, {"variants": variants, "modes": targets, "repeats": repeats, "warmup": 1}, master, timeout_s, cancel, report, resolved)
    points = []
    for variant in variants:
        seconds = raw["runs"].get(variant["label"])
        if seconds:
            points.append(
                BatchPoint(
                    target=variant["mode"],
                    max_records_per_batch=variant["conf"][ARROW_BATCH_CONF],
                    median_s=round(statistics.median(seconds), 4),
                    min_s=round(min(seconds), 4),
                    max_s=round(max(seconds), 4),
                    peak_worker_mib=round(raw["peak_worker_rss"].get(variant["label"], 0) / 2**20, 1),
                )
            )
    best = {target: min((p for p in points if p.target == target), key=lambda p: p.median_s).max_records_per_batch for target in targets if any(p.target == target for p in points)}
    if "candidate" in best:
        size = best["candidate"]
        recommendation = f'set {ARROW_BATCH_CONF}={size} for the job (spark.conf.set("{ARROW_BATCH_CONF}", "{size}"), or --conf {ARROW_BATCH_CONF}={size}); the default is 10000.{compiler_note(raw.get("environment"))}'
    else:
        recommendation = "no batch size ran to completion; see failed."
    result = TuneArrowBatchResult(
        workspace=str(opened.path),
        candidate=name,
        rows=rows,
        points=points,
        failed=[FailedMode(mode=label, error=error) for label, error in raw["failed"].items()],
        best=best,
        recommendation=recommendation,
        gate=gate_text,
        confined=bool(raw.get("confined")),
        confinement=str(raw.get("confinement", "")),
        artifacts={"json": str(folder / "arrow_batch.json"), "chart": str(folder / "arrow_batch.png")},
        duration_s=round(time.monotonic() - started, 3),
    )
    _batch_chart(result, folder / "arrow_batch.png")
    (folder / "arrow_batch.json").write_text(json.dumps({**result.model_dump(), "raw_seconds": raw["runs"], "environment": raw["environment"]}, indent=2), encoding="utf-8")
    return result


def _batch_chart(result: TuneArrowBatchResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, time_axes = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    memory_axes = time_axes.twinx()
    for target, colour in (("candidate", "#1b9e77"), ("original", "#d95f02")):
        points = [p for p in result.points if p.target == target]
        if not points:
            continue
        sizes = [p.max_records_per_batch for p in points]
        time_axes.errorbar(sizes, [p.median_s for p in points], yerr=[[p.median_s - p.min_s for p in points], [p.max_s - p.median_s for p in points]], marker="o", color=colour, capsize=4, label=f"{target}: seconds")
        memory_axes.plot(sizes, [p.peak_worker_mib for p in points], linestyle="--", marker="x", color=colour, alpha=0.6, label=f"{target}: worker MiB")
    time_axes.set_xscale("log")
    time_axes.set_xlabel("spark.sql.execution.arrow.maxRecordsPerBatch")
    time_axes.set_ylabel("seconds per run (median, min-max)")
    memory_axes.set_ylabel("peak Python worker memory (MiB)")
    best = result.best.get("candidate")
    time_axes.set_title(f"{result.candidate}: Arrow batch size sweep, {result.rows:,} rows" + (f"; fastest at {best:,}" if best else ""), fontsize=10)
    handles = time_axes.get_legend_handles_labels()
    extra = memory_axes.get_legend_handles_labels()
    time_axes.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=8, loc="upper center")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


class MicroBenchmarkResult(BaseModel):
    workspace: str
    candidate: str
    rows: int
    repeats: int
    original_median_s: float = Field(description="the original over the rows: in plain Python (a pandas UDF on whole Series); for a sql candidate, the UDF as Spark runs it over the cached rows")
    candidate_median_s: float = Field(description="the candidate over the same rows: evaluate(*series); for a sql candidate, its expression over the cached rows")
    speedup: float
    original_s: list[float]
    candidate_s: list[float]
    floor_median_s: float | None = Field(None, description="sql: the arguments alone written the same way, no UDF: the fixed cost included in both medians")
    original_raised_rows: int = Field(description="rows on which the original raised (timed, then skipped)")
    backend: Literal["cpu", "gpu"] = Field(description="where evaluate ran, as the timed process reported it")
    gpu_verified: bool
    backend_note: str
    allocator: dict[str, Any] = Field(default_factory=dict, description="GPU backend: the allocator configuration the timings ran under")
    device: dict[str, Any] = Field(default_factory=dict, description="GPU backend: the CuPy package (CUDA 12 or 13 build), CUDA versions and device")
    confined: bool = Field(False, description="the timed process ran confined")
    confinement: str = Field("", description="how, or why not")
    note: str = "the entry points alone, in one process: no Spark, no serialization; run_benchmark measures the job"
    duration_s: float


def micro_benchmark(
    root: SandboxRoot,
    workspace: str,
    candidate: str,
    rows: int | None = None,
    repeats: int = 5,
    spec: dict[str, Any] | None = None,
    timeout_s: float = 1_800,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    backend: str | None = None,
    workers: WorkerPool | None = None,
) -> MicroBenchmarkResult:
    """The candidate's entry point vs the original function on in-memory data, in a child process (agent code never runs in the server).

    A sql candidate has no entry point of its own: it and the original are timed as small Spark jobs over the same
    rows, cached in the warm workers (`workers`), each in its own worker."""
    started = time.monotonic()
    opened, name, kind, resolved = _benchmarkable(root, workspace, candidate, backend=backend)
    if rows is None:  # enough rows that a sql expression's own cost shows above a Spark job's fixed cost (floor_median_s)
        rows = MICRO_SQL_ROWS if kind == "sql" else MICRO_ROWS
    _checked(None, rows, repeats, 0, timeout_s)
    report = progress or (lambda done, total, message: None)
    if kind == "sql":
        if workers is None:
            raise ToolError("timing a sql candidate needs the server's Spark workers; call micro_benchmark through the server.")
        return _sql_micro(opened, workers, name, rows, repeats, spec, timeout_s, cancel, report, started)
    data = bench_data.generate(opened, rows, None, spec, lambda done, total, message: report(0, None, message))
    folder = _new_run_folder(opened)
    request = {**confined_child.sources(opened, f"candidate:{name}"), "data": data.path, "repeats": repeats}
    report(0, None, f"timing evaluate() and the original on {rows} rows")
    raw = _run_child(opened, "aether_mcp.confined.micro_bench", folder, request, "micro.json", data.path, timeout_s, cancel, None, "the micro-benchmark process", resolved)
    if raw.get("error"):
        raise ToolError(f"micro_benchmark could not run the candidate: {raw['error']}; run_tests and byte_compare show where it fails.")
    original, candidate_s = raw["original"], raw["candidate"]
    return MicroBenchmarkResult(
        workspace=str(opened.path),
        candidate=name,
        rows=rows,
        repeats=repeats,
        **_timings(original, candidate_s),
        original_raised_rows=raw["original_raised_rows"],
        backend=raw["backend"],
        gpu_verified=False,
        backend_note=f"{resolved.note}; gpu_verified: false (micro_benchmark times, it records no device activity: run_benchmark or audit_candidate do)",
        allocator=raw.get("allocator") or {},
        device=raw.get("device") or {},
        confined=bool(raw.get("confined")),
        confinement=str(raw.get("confinement", "")),
        duration_s=round(time.monotonic() - started, 3),
    )


def _timings(original: list[float], candidate_s: list[float]) -> dict[str, Any]:
    """A micro-benchmark's medians, speedup and every run, rounded as results show them."""
    return {
        "original_median_s": round(statistics.median(original), 5),
        "candidate_median_s": round(statistics.median(candidate_s), 5),
        "speedup": round(statistics.median(original) / statistics.median(candidate_s), 3) if statistics.median(candidate_s) > 0 else math.inf,
        "original_s": [round(v, 5) for v in original],
        "candidate_s": [round(v, 5) for v in candidate_s],
    }


def _sql_micro(
    opened: Workspace, workers: WorkerPool, name: str, rows: int, repeats: int, spec: dict[str, Any] | None, timeout_s: float, cancel: threading.Event | None, report: Progress, started: float
) -> MicroBenchmarkResult:
    """The original (reference worker) and a sql candidate (candidate worker), each over the same rows cached in its warm worker."""
    data = bench_data.generate(opened, rows, None, spec, lambda done, total, message: report(0, 2, message))
    timed: dict[str, dict[str, Any]] = {}
    for step, (role, target) in enumerate((("reference", "original"), ("candidate", f"candidate:{name}"))):
        report(step, 2, f"timing {target} over {rows} cached rows in the {role} worker ({repeats} runs after one warm-up)")
        try:
            timed[role] = workers.timing(role, opened, target, data.path, repeats, timeout_s=timeout_s, cancel=cancel)
        except EvaluationFailed as exc:
            if exc.kind == "cancelled":
                raise ToolError("micro_benchmark was cancelled; its Spark worker was stopped and the next call starts a fresh one.") from None
            if role == "reference":
                raise ToolError(
                    f"the original could not run over these rows ({exc}): it raises on some of them, and so would its job. "
                    "Pass a spec whose null_rate, min/max or values keep to inputs the original returns on (byte_compare's original_raised shows them)."
                ) from None
            raise ToolError(f"micro_benchmark could not run the candidate: {exc}; run_tests and byte_compare show where it fails.") from None
    report(2, 2, "done")
    original, candidate_s, floor = timed["reference"]["seconds"], timed["candidate"]["seconds"], timed["reference"].get("floor_seconds") or []
    confinement = workers.get("candidate", opened.config.spark).confinement
    return MicroBenchmarkResult(
        workspace=str(opened.path),
        candidate=name,
        rows=rows,
        repeats=repeats,
        **_timings(original, candidate_s),
        floor_median_s=round(statistics.median(floor), 5) if floor else None,
        original_raised_rows=0,
        backend="cpu",
        gpu_verified=False,
        backend_note="spark-sql: JVM expressions, no Python; the original as the job runs it (its Python workers included)",
        confined=confinement.confined,
        confinement=confinement.how,
        note=(
            "each side a Spark job over the same rows cached in its warm worker (the original in the reference worker, the candidate in the "
            "confined candidate worker), every output value written to Spark's noop sink; no file is read or written and nothing is collected: "
            "run_benchmark measures the job"
        ),
        duration_s=round(time.monotonic() - started, 3),
    )
