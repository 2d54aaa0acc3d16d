"""Which backend a run uses, and proof that the GPU path really ran.

`choose` turns a call's `backend` ("auto", "cpu", "gpu"; None: aether.toml's [backend] use) into
an aether_mcp.backend.Resolved, or a ToolError saying why the GPU cannot be used and what to do.

On the GPU backend, `prove` records device activity during the candidate's run: the candidate's
evaluate(*series) runs in a child process on generated rows converted to device Series as Spark's
batches are, and `judge` reads the kernel launches and the host/device copies. The counters come
from Nsight Systems (`nsys` wraps the child) or, where nsys is missing, from CUPTI through
PyTorch's profiler inside the child (aether_mcp.parsers.device_counters chooses, and the result
names the source). No kernel launch means the candidate computed on the host; device-to-host
copies numbering about one per row, or bytes far above the result's size, mean data went back to
the host mid-computation. Either is a blocking audit finding. Where neither source exists, or the
record is incomplete, `gpu_verified` stays false and says why: nothing claims GPU execution it
did not see.
"""

from __future__ import annotations

import ast
import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import bench_data
from aether_mcp.backend import BackendUnavailable, Resolved, resolve
from aether_mcp.judge.cheat_rules import device_capable
from aether_mcp.parsers import device_counters, nsys_report
from aether_mcp.parsers.device_counters import Counters, Source
from aether_mcp.processes import confined_child, subprocess_runner
from aether_mcp.workspace import Workspace, new_run_id
from aether_mcp.workspace.candidates import BadCandidate, candidate_path, declared_target

DEVICE_ROWS = 100_000
DEVICE_CALLS = 2  # one warm-up call (compilation, caches) and one more, both traced
CUPTI_TRACE = "cupti_trace.json"
Progress = Callable[[int, int | None, str], None]


class DeviceProblem(BaseModel):
    rule: Literal["no_device_work", "host_round_trip"]
    message: str


class DeviceActivity(BaseModel):
    source: Literal["nsys", "cupti"] = Field(description="what recorded it: Nsight Systems around the child, or CUPTI (torch.profiler) inside it")
    source_detail: str = Field("", description="the recorder and its version")
    rows: int = Field(description="rows per call of evaluate(*series)")
    calls: int = Field(description="calls traced (a warm-up included)")
    kernel_launches: int
    host_to_device_bytes: int
    device_to_host_bytes: int
    device_to_host_copies: int
    result_bytes: int = Field(description="size of one call's result as Arrow: the one copy back that is needed")
    complete: bool = Field(True, description="false: the record is empty or inconsistent (launch calls without kernel records), so it proves nothing either way")
    notes: list[str] = Field(default_factory=list, description="why a record is incomplete, and what the source could not read")
    problems: list[DeviceProblem] = Field(description="blocking: no kernel ran, or data came back to the host mid-computation")
    device: dict[str, Any] = Field(default_factory=dict, description="the CuPy package (CUDA 12 or 13 build), CUDA versions and device the counters were recorded on")
    artifacts: dict[str, str] = Field(default_factory=dict)


def choose(opened: Workspace, target: str, requested: str | None) -> Resolved:
    """The backend for running `target` ('original' or 'candidate:<name>'); a ToolError if the GPU was asked for and cannot run."""
    if target == "original":
        return Resolved("cpu", False, "the original UDF as Spark runs it, in Spark's Python workers")
    name = target.removeprefix("candidate:")
    device_code, needs_cudf = True, False
    try:
        source = candidate_path(opened, target).read_text(encoding="utf-8")
        kind: str | None = declared_target(source, name)
        tree = ast.parse(source)
        device_code, needs_cudf = device_capable(tree), uses_cudf(tree)
    except (BadCandidate, OSError, UnicodeDecodeError, SyntaxError):
        kind = None
    try:
        return resolve(requested or opened.config.backend.use, kind, device_code, needs_cudf)
    except BackendUnavailable as exc:
        raise ToolError(f"{exc}; nothing was run.") from None


def uses_cudf(tree: ast.AST) -> bool:
    """The candidate uses cuDF itself: it imports cudf, or takes `xdf` from aether_mcp.backend."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] in ("cudf", "pylibcudf") for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and ((node.module or "").split(".")[0] in ("cudf", "pylibcudf") or any(alias.name == "xdf" for alias in node.names)):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "xdf":
            return True
    return False


def judge(counters: Counters, rows: int, calls: int, result_bytes: int) -> list[DeviceProblem]:
    """Blocking problems in the device activity of `calls` calls on `rows` rows each (none on an incomplete record)."""
    return [DeviceProblem(rule=rule, message=message) for rule, message in device_counters.problems(counters, rows, calls, result_bytes)]


def record(opened: Workspace, name: str, env: dict[str, str], folder: Path, timeout_s: float, cancel: threading.Event | None, report: Progress, source: Source) -> DeviceActivity:
    """Run the candidate's evaluate(*series) with `env` (the backend's), recorded by `source`, and judge what the device did."""
    data = bench_data.generate(opened, DEVICE_ROWS, None, None, lambda done, total, message: report(0, None, message))
    report(0, None, f"recording device activity of evaluate() on {DEVICE_ROWS} rows ({source.detail})")
    output = folder / "device"
    log = "nsys_profile.log" if source.name == "nsys" else "cupti_profile.log"
    child = confined_child.run(
        opened,
        "aether_mcp.confined.micro_bench",
        {**confined_child.sources(opened, f"candidate:{name}"), "data": data.path, "profile": source.name, "repeats": DEVICE_CALLS - 1},
        folder=folder,
        result_name="micro.json",
        timeout_s=timeout_s,
        cancel=cancel,
        read=[data.path],
        env_extra=env,
        keep=(CUPTI_TRACE,) if source.name == "cupti" else (),
        wrap=(lambda argv: nsys_report.profile_command(output, argv)) if source.name == "nsys" else None,
        log_name=log,
    )
    _check(child.ended)
    try:
        raw = json.loads((folder / "micro.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ToolError(f"the device check wrote no result; see {folder / log}.") from None
    if raw.get("error"):
        raise ToolError(f"the candidate failed on the GPU backend: {raw['error']}; byte_compare with backend='gpu' shows where.")
    if raw.get("counters_unavailable"):
        raise ToolError(str(raw["counters_unavailable"]))
    detail = source.detail
    if source.name == "nsys":
        report_file = nsys_report.nsys_rep_path(output)
        if not report_file.is_file():
            raise ToolError(f"nsys profile wrote no report under {folder}; see {folder / log}.")
        _run(nsys_report.stats_command(report_file, folder / "stats"), folder, "nsys_stats.log", timeout_s, cancel, {"PYARROW_IGNORE_TIMEZONE": "1", **env})
        paths = nsys_report.report_paths(folder / "stats")
        counters = device_counters.from_nsys(nsys_report.parse_reports(paths, float(raw["profiled_s"]), int(raw["data_bytes"]), int(raw["result_bytes"]), DEVICE_ROWS))
        artifacts = {"nsys_report": str(report_file), **{f"csv_{k}": str(v) for k, v in paths.items() if v.exists()}}
    else:
        counters = cupti_counters(folder, raw, log)
        detail = str(raw.get("recorder") or detail)
        artifacts = {"cupti_trace": str(folder / CUPTI_TRACE)}
    return DeviceActivity(
        source=counters.source,
        source_detail=detail,
        rows=DEVICE_ROWS,
        calls=DEVICE_CALLS,
        kernel_launches=counters.kernel_launches,
        host_to_device_bytes=counters.transfer("host_to_device").bytes,
        device_to_host_bytes=counters.transfer("device_to_host").bytes,
        device_to_host_copies=counters.transfer("device_to_host").count,
        result_bytes=int(raw["result_bytes"]),
        complete=counters.complete,
        notes=[note for note in counters.notes if source.name == "cupti" or "missing" not in note],
        problems=judge(counters, DEVICE_ROWS, DEVICE_CALLS, int(raw["result_bytes"])),
        device=raw.get("device") or {},
        artifacts=artifacts,
    )


def cupti_counters(folder: Path, raw: dict[str, Any], log: str) -> device_counters.Counters:
    """The device check's CUPTI trace in `folder`, taken only if it still has the digest the recorder gave it right after
    the export (`raw`, the check's result): the candidate's process can write the folder the trace lies in."""
    trace = folder / CUPTI_TRACE
    if not trace.is_file():
        raise ToolError(f"the CUPTI recording wrote no trace under {folder}; see {folder / log}.")
    if hashlib.sha256(trace.read_bytes()).hexdigest() != raw.get("trace_sha256"):
        raise ToolError("the CUPTI trace changed after the recorder exported it (something in the candidate's process rewrote it), so it proves nothing.")
    return device_counters.parse_kineto_trace(trace)


def prove(
    opened: Workspace, name: str, resolved: Resolved, timeout_s: float, cancel: threading.Event | None, report: Progress, source: Source | None = None
) -> tuple[DeviceActivity | None, bool, str]:
    """(activity, gpu_verified, note) for a run on `resolved`: recorded only on the GPU backend, by nsys or CUPTI (`source`: chosen here)."""
    if resolved.name != "gpu":
        why = "kernel under the CUDA simulator" if resolved.simulated else "CPU backend"
        return None, False, f"gpu_verified: false ({why}): nothing ran on a GPU"
    source = source or device_counters.choose_source()
    if source.name is None:
        return None, False, f"gpu_verified: false: device activity could not be recorded: {source.detail}"
    folder = opened.state_dir / "device" / new_run_id(name)
    folder.mkdir(parents=True)
    try:
        activity = record(opened, name, resolved.env(), folder, timeout_s, cancel, report, source)
    except ToolError as exc:
        if cancel is not None and cancel.is_set():
            raise
        # the comparison or the timings stand; only the proof is missing, and the result says so
        return None, False, f"gpu_verified: false: device activity could not be recorded by {source.name} ({exc})"
    (folder / "activity.json").write_text(activity.model_dump_json(indent=2), encoding="utf-8")
    if not activity.complete:
        return activity, False, f"gpu_verified: false: the {activity.source} record cannot prove anything: " + " ".join(activity.notes)
    if activity.problems:
        return activity, False, "gpu_verified: false: " + " ".join(problem.message for problem in activity.problems)
    return activity, True, (
        f"gpu_verified ({activity.source}): {activity.kernel_launches:,} kernel launches, "
        f"{activity.device_to_host_bytes / 1e6:,.1f} MB back to the host in {activity.calls} calls"
    )


def _run(argv: list[str], folder: Path, log: str, timeout_s: float, cancel: threading.Event | None, env: dict[str, Any]) -> None:
    """nsys stats: it reads nsys's own report and runs no agent code."""
    _check(subprocess_runner.run(argv, cwd=folder, log_path=folder / log, timeout_s=timeout_s, env_extra=env, cancel=cancel))


def _check(ended: subprocess_runner.ProcessResult) -> None:
    if ended.cancelled:
        raise ToolError("the device check was cancelled; nothing is left running.")
    if ended.timed_out:
        raise ToolError(f"the device check did not finish within {ended.duration_s:.0f}s and was stopped (log: {ended.log_path}).")
    if ended.returncode != 0:
        raise ToolError(f"the device check failed (exit {ended.returncode}): {ended.tail[-1200:]} (log: {ended.log_path})")
