"""Which backend a run uses, and proof that the GPU path really ran.

`choose` turns a call's `backend` ("auto", "cpu", "gpu"; None: aether.toml's [backend] use) into
an aether_mcp.backend.Resolved, or a ToolError saying why the GPU cannot be used and what to do.

On the GPU backend, `prove` records device activity during the candidate's run: the candidate's
evaluate(*series) runs in a child process under Nsight Systems (`nsys`), on generated rows
converted to cuDF on the device as Spark's batches are, and `judge` reads the kernel launches and
the host/device copies. No kernel launch means the candidate computed on the host; device-to-host
copies numbering about one per row, or bytes far above the result's size, mean data went back to
the host mid-computation. Either is a blocking audit finding. Without nsys the activity cannot be
recorded and `gpu_verified` stays false: nothing claims GPU execution it did not see.
"""

from __future__ import annotations

import ast
import json
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import bench_data
from aether_mcp.backend import BackendUnavailable, Resolved, resolve
from aether_mcp.candidates import BadCandidate, candidate_path, declared_target
from aether_mcp.judge.cheat_rules import device_capable
from aether_mcp.parsers import nsys_report
from aether_mcp.parsers.nsys_report import NsysSummary
from aether_mcp.processes import confined_child, subprocess_runner
from aether_mcp.workspace import Workspace, new_run_id

DEVICE_ROWS = 100_000
DEVICE_CALLS = 2  # one warm-up call (compilation, caches) and one more, both traced
# Device-to-host copies per call at or above this share of the rows: the data comes back one row at a time.
ROW_COPY_SHARE = 0.5
ROW_COPY_MIN = 1_000
# Device-to-host bytes per call above this multiple of the result (plus slack for small reads): a host round trip.
RESULT_MULTIPLE = nsys_report.ROUND_TRIP_RESULT_MULTIPLE
SLACK_BYTES = nsys_report.ROUND_TRIP_MIN_BYTES
Progress = Callable[[int, int | None, str], None]


class DeviceProblem(BaseModel):
    rule: Literal["no_device_work", "host_round_trip"]
    message: str


class DeviceActivity(BaseModel):
    source: Literal["nsys"] = Field("nsys", description="what recorded it")
    rows: int = Field(description="rows per call of evaluate(*series)")
    calls: int = Field(description="calls traced (a warm-up included)")
    kernel_launches: int
    host_to_device_bytes: int
    device_to_host_bytes: int
    device_to_host_copies: int
    result_bytes: int = Field(description="size of one call's result as Arrow: the one copy back that is needed")
    problems: list[DeviceProblem] = Field(description="blocking: no kernel ran, or data came back to the host mid-computation")
    artifacts: dict[str, str] = Field(default_factory=dict)


def choose(opened: Workspace, target: str, requested: str | None) -> Resolved:
    """The backend for running `target` ('original' or 'candidate:<name>'); a ToolError if the GPU was asked for and cannot run."""
    if target == "original":
        return Resolved("cpu", False, "the original UDF as Spark runs it, in Spark's Python workers")
    name = target.removeprefix("candidate:")
    device_code = True
    try:
        source = candidate_path(opened, target).read_text(encoding="utf-8")
        kind: str | None = declared_target(source, name)
        device_code = device_capable(ast.parse(source))
    except (BadCandidate, OSError, UnicodeDecodeError, SyntaxError):
        kind = None
    try:
        return resolve(requested or opened.config.backend.use, kind, device_code)
    except BackendUnavailable as exc:
        raise ToolError(f"{exc}; nothing was run.") from None


def judge(summary: NsysSummary, rows: int, calls: int, result_bytes: int) -> list[DeviceProblem]:
    """Blocking problems in the device activity of `calls` calls on `rows` rows each."""
    problems = []
    if summary.kernel_launches == 0:
        message = (
            "no CUDA kernel ran while the candidate executed on the GPU backend: it computed on the host (NumPy/pandas code, or "
            "a library call that fell back to the CPU). Use xp/xdf from aether_mcp.backend and keep the work in their operations."
        )
        problems.append(DeviceProblem(rule="no_device_work", message=message))
    back = summary.transfers.get("device_to_host")
    copies = back.count if back else 0
    copied = back.bytes if back else 0
    if rows > 0 and copies / calls >= max(ROW_COPY_MIN, ROW_COPY_SHARE * rows):
        message = (
            f"{copies:,} device-to-host copies in {calls} call(s) of {rows:,} rows: the data comes back to the host about one row at "
            "a time (a Python loop, .item(), float(x[i]), .iloc[i] or .tolist() on device data). Keep the computation in whole-column "
            "xp/xdf operations and return a device Series."
        )
        problems.append(DeviceProblem(rule="host_round_trip", message=message))
    elif copied / calls > RESULT_MULTIPLE * result_bytes + SLACK_BYTES:
        message = (
            f"{copied / calls / 1e6:,.1f} MB per call came back from the device for a {result_bytes / 1e6:,.1f} MB result: data went "
            "to the host mid-computation (.to_pandas(), .values_host, .to_numpy(), .get()) and likely back again. Keep every step on "
            "the device and return a device Series; the harness copies the result once."
        )
        problems.append(DeviceProblem(rule="host_round_trip", message=message))
    return problems


def record(opened: Workspace, name: str, env: dict[str, str], folder: Path, timeout_s: float, cancel: threading.Event | None, report: Progress) -> DeviceActivity:
    """Run the candidate's evaluate(*series) under `nsys` with `env` (the backend's) and judge what the device did."""
    data = bench_data.generate(opened, DEVICE_ROWS, None, None, lambda done, total, message: report(0, None, message))
    report(0, None, f"recording device activity of evaluate() on {DEVICE_ROWS} rows under nsys")
    output = folder / "device"
    child = confined_child.run(
        opened,
        "aether_mcp.confined.micro_bench",
        {**confined_child.sources(opened, f"candidate:{name}"), "data": data.path, "profile": "nsys", "repeats": DEVICE_CALLS - 1},
        folder=folder,
        result_name="micro.json",
        timeout_s=timeout_s,
        cancel=cancel,
        read=[data.path],
        env_extra=env,
        wrap=lambda argv: nsys_report.profile_command(output, argv),
        log_name="nsys_profile.log",
    )
    _check(child.ended)
    try:
        raw = json.loads((folder / "micro.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ToolError(f"the device check wrote no result; see {folder / 'nsys_profile.log'}.") from None
    if raw.get("error"):
        raise ToolError(f"the candidate failed on the GPU backend: {raw['error']}; byte_compare with backend='gpu' shows where.")
    report_file = nsys_report.nsys_rep_path(output)
    if not report_file.is_file():
        raise ToolError(f"nsys profile wrote no report under {folder}; see {folder / 'nsys_profile.log'}.")
    _run(nsys_report.stats_command(report_file, folder / "stats"), folder, "nsys_stats.log", timeout_s, cancel, {"PYARROW_IGNORE_TIMEZONE": "1", **env})
    paths = nsys_report.report_paths(folder / "stats")
    summary = nsys_report.parse_reports(paths, float(raw["profiled_s"]), int(raw["data_bytes"]), int(raw["result_bytes"]), DEVICE_ROWS)
    return DeviceActivity(
        rows=DEVICE_ROWS,
        calls=DEVICE_CALLS,
        kernel_launches=summary.kernel_launches,
        host_to_device_bytes=summary.transfers["host_to_device"].bytes,
        device_to_host_bytes=summary.transfers["device_to_host"].bytes,
        device_to_host_copies=summary.transfers["device_to_host"].count,
        result_bytes=int(raw["result_bytes"]),
        problems=judge(summary, DEVICE_ROWS, DEVICE_CALLS, int(raw["result_bytes"])),
        artifacts={"nsys_report": str(report_file), **{f"csv_{k}": str(v) for k, v in paths.items() if v.exists()}},
    )


def prove(opened: Workspace, name: str, resolved: Resolved, timeout_s: float, cancel: threading.Event | None, report: Progress) -> tuple[DeviceActivity | None, bool, str]:
    """(activity, gpu_verified, note) for a run on `resolved`: activity is recorded only on the GPU backend with nsys."""
    if resolved.name != "gpu":
        why = "kernel under the CUDA simulator" if resolved.simulated else "CPU backend"
        return None, False, f"gpu_verified: false ({why}): nothing ran on a GPU"
    if shutil.which("nsys") is None:
        return None, False, "gpu_verified: false: nsys (Nsight Systems) is not on the PATH, so device activity could not be recorded; install it to prove the GPU path ran"
    folder = opened.state_dir / "device" / new_run_id(name)
    folder.mkdir(parents=True)
    try:
        activity = record(opened, name, resolved.env(), folder, timeout_s, cancel, report)
    except ToolError as exc:
        if cancel is not None and cancel.is_set():
            raise
        # the comparison or the timings stand; only the proof is missing, and the result says so
        return None, False, f"gpu_verified: false: device activity could not be recorded ({exc})"
    (folder / "activity.json").write_text(activity.model_dump_json(indent=2), encoding="utf-8")
    if activity.problems:
        return activity, False, "gpu_verified: false: " + " ".join(problem.message for problem in activity.problems)
    return activity, True, f"gpu_verified: {activity.kernel_launches:,} kernel launches, {activity.device_to_host_bytes / 1e6:,.1f} MB back to the host in {activity.calls} calls"


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
