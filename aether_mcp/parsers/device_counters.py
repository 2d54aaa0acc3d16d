"""Device counters for `gpu_verified`: kernel launches and host/device copies, from Nsight Systems or CUPTI.

Two sources record the same facts about a child that runs a candidate on the GPU backend:
- "nsys": Nsight Systems wraps the child process; `nsys_report` parses its statistics CSVs.
- "cupti": the child records its own calls through PyTorch's profiler. That is Kineto over
  CUPTI's activity API, which is process-wide: the kernels and copies of CuPy, numba and cuDF
  are recorded, not only PyTorch's. The child exports a Chrome trace, which
  `parse_kineto_trace` reads back in the server. The candidate has no business with the recorder:
  torch is not on the import allow-list (a blocking audit finding, statically and in the watch's record).
  The child's result is written last with no code run after it (confined/result_file.py), and the
  trace is taken only with the digest the recorder gave it right after the export.
`choose_source` picks one from what this machine has, without importing anything: nsys on the
PATH first (its report is kept for the agent to open), then PyTorch (which brings CUPTI), else
none, with the reason. Both sources become one `Counters`, and `problems` judges it.

A CUPTI record has to show that it could see: the recorder first launches a probe kernel of its
own (`PROBE_KERNEL`, through CuPy), which the parser requires and then leaves out of the count.
An empty trace is therefore never read as "no device work", and a record without the probe, or
with kernel launch calls but no kernel activity, is no evidence either way: `Counters.complete`
is false and `gpu_verified` stays false, saying why.

Standard library only, so the GPU check runs it on machines without pydantic or PySpark.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.util
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOURCES = ("nsys", "cupti")
DIRECTIONS = ("host_to_device", "device_to_host")
# A kernel launch seen on the host (runtime or driver API) without any kernel activity on the device means the device records were lost.
LAUNCH_CALLS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel"})
# Device-to-host copies per call at or above this share of the rows (and at least ROW_COPY_MIN): the data comes back one row at a time.
ROW_COPY_SHARE = 0.5
ROW_COPY_MIN = 1_000
# Device-to-host bytes per call above this multiple of the result, plus slack for small reads: a host round trip.
RESULT_MULTIPLE = 4
SLACK_BYTES = 1_000_000
# Kineto's copy names: "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memcpy DtoD (Device -> Device)", "Memcpy PtoP ...".
PROBE_KERNEL = "aether_counters_probe"
_KINETO_MEMCPY = re.compile(r"^Memcpy\s+([HDAP])to([HDAP])\b")


@dataclass(frozen=True)
class Source:
    name: str | None  # "nsys", "cupti", or None: nothing here can record device activity
    detail: str  # what records it, or why nothing can


@dataclass
class Transfer:
    count: int = 0
    bytes: int = 0
    time_s: float = 0.0


@dataclass
class Counters:
    source: str
    kernel_launches: int
    kernel_time_s: float
    transfers: dict[str, Transfer]
    launch_calls: int | None = None  # kernel launches the host asked for, where the source records API calls
    probe_seen: bool | None = None  # CUPTI: the recorder's own probe kernel is in the record (None: no probe was asked for)
    complete: bool = True  # false: the record cannot carry a verdict (see notes)
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def transfer(self, direction: str) -> Transfer:
        return self.transfers.get(direction) or Transfer()

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kernel_launches": self.kernel_launches,
            "kernel_time_s": self.kernel_time_s,
            "transfers": {key: vars(value) for key, value in self.transfers.items()},
            "launch_calls": self.launch_calls,
            "probe_seen": self.probe_seen,
            "complete": self.complete,
            "notes": list(self.notes),
            "meta": dict(self.meta),
        }


class CountersUnavailable(RuntimeError):
    """This process cannot record device activity (no PyTorch, no CUDA profiling, no device)."""


def choose_source(which: Callable[[str], str | None] = shutil.which, find_spec: Callable[[str], Any] = importlib.util.find_spec) -> Source:
    """Which source of device counters this machine has, looked up without importing anything."""
    nsys = which("nsys")
    if nsys:
        return Source("nsys", f"Nsight Systems ({nsys})")
    if _has_profiler(find_spec):
        return Source("cupti", "CUPTI through PyTorch's profiler (torch.profiler, in the candidate's process)")
    return Source(
        None,
        "no source of device counters: nsys (Nsight Systems) is not on the PATH and PyTorch (whose profiler reads CUPTI) is not installed; "
        "install either to prove the GPU path ran",
    )


def _has_profiler(find_spec: Callable[[str], Any]) -> bool:
    """torch is installed with its profiler package, found on disk: find_spec("torch.profiler") would import torch."""
    try:
        spec = find_spec("torch")
    except (ImportError, ValueError):  # a broken installation
        return False
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    return any((Path(location) / "profiler").is_dir() for location in locations)


def direction_of_kineto(name: str) -> str:
    match = _KINETO_MEMCPY.match(name)
    if match is None:
        return "other"
    source, destination = ("host" if end == "H" else "device" for end in match.groups())
    key = f"{source}_to_{destination}"
    return key if key != "host_to_host" else "other"


def parse_kineto_trace(trace: dict[str, Any] | str | Path, probe: str | None = PROBE_KERNEL) -> Counters:
    """A Kineto Chrome trace (`torch.profiler.profile(...).export_chrome_trace`, `.json` or `.json.gz`) as Counters.

    Device activity is the complete ("ph": "X") events of category "kernel", "gpu_memcpy" (bytes
    in args) and "gpu_memset"; "cuda_runtime" and "cuda_driver" events are the host's API calls,
    of which the launch calls cross-check the kernel count. Kernels named `probe` are the
    recorder's own: required, counted apart, and with their launch calls left out. Never raises
    for a malformed trace: it becomes an incomplete record whose notes say what was wrong.
    """
    if not isinstance(trace, dict):
        try:
            path = Path(trace)
            opened = gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8")
            with opened as handle:
                trace = json.load(handle)
        except (OSError, ValueError, EOFError) as exc:
            return _incomplete("cupti", f"the CUPTI trace could not be read ({exc.__class__.__name__}: {exc})")
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        return _incomplete("cupti", "the CUPTI trace has no traceEvents list")
    kernels, probes, kernel_us, launch_calls = 0, 0, 0.0, 0
    transfers: dict[str, Transfer] = {direction: Transfer() for direction in DIRECTIONS}
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        category, name = event.get("cat"), str(event.get("name", ""))
        duration = _number(event.get("dur"))
        if category == "kernel":
            if probe is not None and name == probe:
                probes += 1
                continue
            kernels += 1
            kernel_us += duration
        elif category in ("gpu_memcpy", "gpu_memset"):
            key = "memset" if category == "gpu_memset" else direction_of_kineto(name)
            moved = transfers.setdefault(key, Transfer())
            moved.count += 1
            moved.bytes += int(_number((event.get("args") or {}).get("bytes")))
            moved.time_s += duration / 1e6
        elif category in ("cuda_runtime", "cuda_driver"):
            launch_calls += name in LAUNCH_CALLS
    launch_calls = max(0, launch_calls - probes)  # each probe kernel had its own launch call
    meta = {key: trace[key] for key in ("cupti_version", "cuda_runtime_version", "cuda_driver_version") if key in trace}
    devices = trace.get("deviceProperties")
    if isinstance(devices, list) and devices:
        meta["devices"] = [str(device.get("name", "?")) for device in devices if isinstance(device, dict)]
    counters = Counters("cupti", kernels, kernel_us / 1e6, transfers, launch_calls=launch_calls, probe_seen=None if probe is None else probes > 0, meta=meta)
    if probe is not None and probes == 0:
        counters.complete = False
        counters.notes.append(
            f"the recorder's own probe kernel ({probe}) is not in the CUPTI trace: the recording did not see the device, so an absence of kernels or copies proves nothing"
        )
    if kernels == 0 and launch_calls > 0:
        counters.complete = False
        counters.notes.append(f"the host made {launch_calls:,} kernel launch calls but CUPTI recorded none of those kernels on the device: the device records were lost")
    return counters


def from_nsys(summary: Any) -> Counters:
    """An nsys_report.NsysSummary as Counters (nsys records the whole process, so its record is complete)."""
    transfers = {key: Transfer(stat.count, stat.bytes, stat.time_s) for key, stat in summary.transfers.items()}
    for direction in DIRECTIONS:
        transfers.setdefault(direction, Transfer())
    launch_calls = sum(api.calls for api in summary.cuda_api if api.name in LAUNCH_CALLS) or None
    return Counters("nsys", summary.kernel_launches, summary.kernel_time_s, transfers, launch_calls=launch_calls, notes=list(summary.notes))


def problems(counters: Counters, rows: int, calls: int, result_bytes: int) -> list[tuple[str, str]]:
    """Blocking problems, as (rule, message), in the device activity of `calls` calls on `rows` rows each.

    Judged only on a complete record: an incomplete one has no problems and no proof either.
    """
    if not counters.complete:
        return []
    found = []
    if counters.kernel_launches == 0:
        found.append((
            "no_device_work",
            "no CUDA kernel ran while the candidate executed on the GPU backend: it computed on the host (NumPy/pandas code, or "
            "a library call that fell back to the CPU). Use xp/xdf from aether_mcp.backend and keep the work in their operations.",
        ))
    back = counters.transfer("device_to_host")
    if rows > 0 and back.count / calls >= max(ROW_COPY_MIN, ROW_COPY_SHARE * rows):
        found.append((
            "host_round_trip",
            f"{back.count:,} device-to-host copies in {calls} call(s) of {rows:,} rows: the data comes back to the host about one row at "
            "a time (a Python loop, .item(), float(x[i]), .iloc[i] or .tolist() on device data). Keep the computation in whole-column "
            "xp/xdf operations and return a device Series.",
        ))
    elif back.bytes / calls > RESULT_MULTIPLE * result_bytes + SLACK_BYTES:
        found.append((
            "host_round_trip",
            f"{back.bytes / calls / 1e6:,.1f} MB per call came back from the device for a {result_bytes / 1e6:,.1f} MB result: data went "
            "to the host mid-computation (.to_pandas(), .values_host, .to_numpy(), .get()) and likely back again. Keep every step on "
            "the device and return a device Series; the harness copies the result once.",
        ))
    return found


@contextlib.contextmanager
def cupti_recording(trace_path: Path, probe: Callable[[], None] | None = None) -> Iterator[dict[str, Any]]:
    """Record this process's CUDA activity inside the block through torch.profiler, as a Chrome trace at `trace_path`.

    `probe` (default `launch_probe`) runs first inside the recording, so the trace shows that the
    recorder saw the device. Yields a dict that names the recorder; raises CountersUnavailable
    before the block runs when PyTorch cannot profile CUDA here. Every library's kernels in the
    process are recorded.
    """
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile, supported_activities
    except ImportError as exc:
        raise CountersUnavailable(f"PyTorch is not importable here ({exc}), so CUPTI cannot be read through its profiler") from None
    if ProfilerActivity.CUDA not in supported_activities():
        raise CountersUnavailable(f"torch {torch.__version__} cannot profile CUDA here (built without CUDA or CUPTI, or no usable device)")
    info: dict[str, Any] = {"recorder": f"CUPTI through torch.profiler (torch {torch.__version__}, Kineto)", "trace": str(trace_path)}
    with profile(activities=[ProfilerActivity.CUDA]) as recorder:
        (probe or launch_probe)()
        yield info
    recorder.export_chrome_trace(str(trace_path))
    # The candidate can write the folder the trace lies in: the server takes the trace only if it still has this digest.
    info["trace_sha256"] = hashlib.sha256(Path(trace_path).read_bytes()).hexdigest()


def launch_probe() -> None:
    """One launch of a kernel named PROBE_KERNEL on the current device, through CuPy, waited for."""
    import cupy

    kernel = cupy.ElementwiseKernel("float32 x", "float32 y", "y = x + 1.0f", PROBE_KERNEL)
    kernel(cupy.zeros(32, dtype=cupy.float32))
    cupy.cuda.runtime.deviceSynchronize()


def _incomplete(source: str, note: str) -> Counters:
    return Counters(source, 0, 0.0, {direction: Transfer() for direction in DIRECTIONS}, complete=False, notes=[note])


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and number >= 0 else 0.0
