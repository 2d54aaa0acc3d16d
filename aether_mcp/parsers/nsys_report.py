"""Nsight Systems statistics reports -> a structured GPU profile summary, and the nsys command lines that produce them.

A profile is three steps: run the micro-benchmark under `profile_command` (writes a `.nsys-rep`),
export the summaries with `stats_command` (one CSV per report, at `report_paths(prefix)`), then read
them back with `parse_reports`. This module only builds argv lists and parses files; it runs nothing.

Report layouts, as NVIDIA's report scripts (`<nsys>/target-linux-x64/reports/*.py`) write them:
  cuda_gpu_kern_sum      Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
  cuda_gpu_mem_time_sum  Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation
  cuda_gpu_mem_size_sum  Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation
  nvtx_sum               Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range
  cuda_api_sum           Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
Older releases (2020-2021) named them gpukernsum, gpumemtimesum, gpumemsizesum, nvtxppsum, cudaapisum, with
columns Time(%),Total Time (ns),Instances|Operations|Num Calls,Average,Minimum,Maximum,Name|Operation|Range and
memory sizes as a bare "Total" in KiB. Columns are found by their header text, so either layout reads.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from pydantic import BaseModel, Field

from aether_mcp.lazy_import import lazy_module

pd = lazy_module("pandas")


REPORTS = ("cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "nvtx_sum", "cuda_api_sum")
# Names the same reports had in older nsys releases, tried when the current name's file is absent.
LEGACY_REPORT_NAMES = {
    "cuda_gpu_kern_sum": ("gpukernsum",),
    "cuda_gpu_mem_time_sum": ("gpumemtimesum",),
    "cuda_gpu_mem_size_sum": ("gpumemsizesum",),
    "nvtx_sum": ("nvtx_pushpop_sum", "nvtxppsum", "nvtxsum"),
    "cuda_api_sum": ("cudaapisum",),
}
TRANSFER_DIRECTIONS = ("host_to_device", "device_to_host")

# Ten kernels or API calls name where the time went; the tail is noise in a tool response.
TOP_LIMIT = 10
# cuDF can open hundreds of NVTX ranges; the twenty largest say which library calls dominate.
NVTX_LIMIT = 20
# A kernel launch costs ~5 µs of fixed overhead, so kernels averaging under 10 µs are dominated by launching, not by work.
TINY_KERNEL_MEAN_NS = 10_000
# Below 1,000 launches the total launch overhead stays under ~10 ms, too little to be worth fusing.
TINY_KERNEL_MIN_LAUNCHES = 1_000
# Copying back half of the input (beyond the result itself) means the data went to the host mid-computation, not just the answer.
ROUND_TRIP_INPUT_SHARE = 0.5
# A result plus validity masks, offsets and padding stays within a few times its size; more than 4x is data the answer does not need.
ROUND_TRIP_RESULT_MULTIPLE = 4
# Under 1 MB back to the host is scalars, offsets and sync flags, normal for any GPU library.
ROUND_TRIP_MIN_BYTES = 1_000_000
# Kernels busy for under a fifth of the wall time leave the host (Python, conversions, copies) as the bottleneck.
LOW_GPU_SHARE = 0.2

# Time columns default to nanoseconds (every report's documented default); `nsys stats --timeunit` changes the header unit.
_NS_PER_UNIT = {None: 1.0, "ns": 1.0, "nsec": 1.0, "us": 1e3, "usec": 1e3, "µs": 1e3, "ms": 1e6, "msec": 1e6, "s": 1e9, "sec": 1e9}
# nsys "MB" is decimal: a 16 MiB (16,777,216-byte) cudaMemcpy is reported as 16.777 MB, so MB = 1,000,000 bytes (KB, GB alike).
# The old gpumemsizesum printed a bare "Total" and documented "All memory values given in KiB", so no unit means KiB.
_BYTES_PER_UNIT = {None: 1024.0, "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3}
# Header labels (text before the unit) of every report and layout, mapped to one column name each.
_LABELS = {
    "name": "name", "range": "name", "operation": "name",
    "total time": "total_ns", "avg": "mean_ns", "average": "mean_ns",
    "instances": "events", "count": "events", "num calls": "events", "calls": "events", "operations": "events",
    "total": "total_bytes",
}
# Columns each report must have; mean_ns is also taken from timed reports when present (else total / events).
_REQUIRED = {
    "cuda_gpu_kern_sum": ("name", "total_ns", "events"),
    "cuda_gpu_mem_time_sum": ("name", "total_ns", "events"),
    "cuda_gpu_mem_size_sum": ("name", "total_bytes", "events"),
    "nvtx_sum": ("name", "total_ns", "events"),
    "cuda_api_sum": ("name", "total_ns", "events"),
}
_HEADER = re.compile(r"^\s*(?P<label>[^(]*?)\s*(?:\((?P<unit>[^)]*)\))?\s*$")
# "[CUDA memcpy Host-to-Device]" (current), "[CUDA memcpy HtoD]" (older), "[CUDA Unified Memory memcpy DtoH]"; arrays and peers are device memory.
_MEMCPY = re.compile(r"memcpy\s+(Host|Device|Array|Peer|H|D|A|P)-?to-?(Host|Device|Array|Peer|H|D|A|P)\b")


class KernelStat(BaseModel):
    name: str = Field(description="kernel name as nsys prints it (demangled, templates included)")
    share: float = Field(description="this kernel's share of the total GPU kernel time, 0..1; the shares of all kernels, listed or not, sum to 1")
    instances: int = Field(description="launches of this kernel")
    total_ns: int
    mean_ns: float


class TransferStat(BaseModel):
    bytes: int = Field(default=0, description="bytes moved, from cuda_gpu_mem_size_sum")
    time_s: float = Field(default=0.0, description="GPU time spent moving them, from cuda_gpu_mem_time_sum")
    count: int = Field(default=0, description="number of copy (or memset) operations")


class NvtxRangeStat(BaseModel):
    name: str = Field(description="range name, domain prefix kept ('libcudf:...'), a bare leading ':' removed")
    total_ns: int
    instances: int
    mean_ns: float


class CudaApiStat(BaseModel):
    name: str
    total_ns: int = Field(description="host time inside this CUDA API function")
    calls: int


class NsysSummary(BaseModel):
    kernels: list[KernelStat] = Field(description=f"the {TOP_LIMIT} kernels with the most GPU time, most first")
    kernel_launches: int = Field(description="launches of all kernels, not only those listed")
    kernel_time_s: float = Field(description="summed duration of all kernels; kernels overlapping on several streams can make it exceed wall time")
    transfers: dict[str, TransferStat] = Field(description="host_to_device and device_to_host always; device_to_device, memset and other when they occurred")
    nvtx_ranges: list[NvtxRangeStat] = Field(description=f"the {NVTX_LIMIT} NVTX ranges with the most time, most first (cuDF annotates its calls with these)")
    cuda_api: list[CudaApiStat] = Field(description=f"the {TOP_LIMIT} CUDA API functions with the most host time, most first")
    gpu_share: float | None = Field(description="kernel_time_s / wall_s; None when no positive wall time was given")
    hints: list[str] = Field(description="plain-English findings, each saying what it means and what to do; empty when nothing stands out")
    notes: list[str] = Field(description="reports that were missing, empty, skipped by nsys, unreadable or read under an older name")


def profile_command(output: Path, argv: list[str]) -> list[str]:
    """argv for `nsys profile` tracing CUDA, NVTX and OS runtime calls of `argv`, without CPU sampling.

    nsys writes the report to `nsys_rep_path(output)` (it appends `.nsys-rep` unless `output` ends with it) and
    overwrites an existing one. `argv` is passed through untouched as separate arguments, never via a shell.
    """
    if not argv:
        raise ValueError("profile_command needs the command to profile")
    return ["nsys", "profile", "--trace=cuda,nvtx,osrt", "--sample=none", "--force-overwrite=true", f"--output={output}", *argv]


def nsys_rep_path(output: Path) -> Path:
    """The `.nsys-rep` file `nsys profile --output=<output>` writes."""
    return output if output.name.endswith(".nsys-rep") else output.with_name(output.name + ".nsys-rep")


def stats_command(report_file: Path, prefix: Path) -> list[str]:
    """argv for `nsys stats` exporting every report in REPORTS as CSV to `report_paths(prefix)`.

    `--force-export=true` rebuilds the SQLite export next to the report, so a stale one from an earlier
    profile at the same path is never summarised. A report nsys has no data for is skipped: no file is written.
    """
    return ["nsys", "stats", f"--report={','.join(REPORTS)}", "--format=csv", f"--output={prefix}", "--force-export=true", str(report_file)]


def report_paths(prefix: Path) -> dict[str, Path]:
    """Where `stats_command(..., prefix)` writes each report: `<prefix>_<report>.csv`, keyed by report name."""
    return {report: prefix.with_name(f"{prefix.name}_{report}.csv") for report in REPORTS}


def parse_reports(paths: dict[str, Path], wall_s: float, data_bytes: int, result_bytes: int, rows: int) -> NsysSummary:
    """Summarise the CSVs of one profile.

    `paths` maps report names (as `report_paths` gives, older names accepted too) to CSV files; a report whose file
    is absent is also looked for under its older names beside it. The reports total the whole profiled process, so
    `wall_s` must be the wall time of everything they cover (every profiled call, warm-up included), not of one call;
    `data_bytes` and `result_bytes` are the sizes of one call's input and output, `rows` its row count. They only
    judge the hints and gpu_share. Never raises for a missing, empty or malformed report: it counts as no data and
    is explained in `notes`.
    """
    notes: list[str] = []
    loaded = {report: _load_report(report, paths, notes) for report in REPORTS}
    tables = {report: table for report, (table, _) in loaded.items()}
    kernels, kernel_launches, kernel_ns = _kernels(tables["cuda_gpu_kern_sum"])
    kernel_time_s = kernel_ns / 1e9
    gpu_share = kernel_time_s / wall_s if wall_s > 0 else None
    if gpu_share is None:
        notes.append("gpu_share: no positive wall time was given, so the GPU's share of it is unknown")
    any_read = any(status == "read" for _, status in loaded.values())
    if not any_read:
        notes.append("no report could be read at all: nsys stats most likely failed, so there is nothing to judge")
    summary = NsysSummary(
        kernels=kernels,
        kernel_launches=kernel_launches,
        kernel_time_s=kernel_time_s,
        transfers=_transfers(tables["cuda_gpu_mem_time_sum"], tables["cuda_gpu_mem_size_sum"]),
        nvtx_ranges=_nvtx_ranges(tables["nvtx_sum"]),
        cuda_api=_cuda_api(tables["cuda_api_sum"]),
        gpu_share=gpu_share,
        hints=[],
        notes=notes,
    )
    if any_read:
        # An unreadable kernel report says nothing about whether kernels ran; missing, empty or skipped means none did.
        kernels_known = loaded["cuda_gpu_kern_sum"][1] != "unreadable"
        summary.hints.extend(_hints(summary, wall_s, data_bytes, result_bytes, rows, kernels_known))
    return summary


def _kernels(table: pd.DataFrame | None) -> tuple[list[KernelStat], int, int]:
    if table is None or table.empty:
        return [], 0, 0
    total_ns = round(table["total_ns"].sum())
    ordered = table.sort_values(["total_ns", "name"], ascending=[False, True])
    kernels = [
        KernelStat(name=row.name, share=row.total_ns / total_ns if total_ns else 0.0, instances=round(row.events), total_ns=round(row.total_ns), mean_ns=float(row.mean_ns))
        for row in ordered.head(TOP_LIMIT).itertuples(index=False)
    ]
    return kernels, round(table["events"].sum()), total_ns


def _transfers(times: pd.DataFrame | None, sizes: pd.DataFrame | None) -> dict[str, TransferStat]:
    transfers = {direction: TransferStat() for direction in TRANSFER_DIRECTIONS}
    counted_by_time: set[str] = set()
    for row in [] if times is None else times.itertuples(index=False):
        stat = transfers.setdefault(_direction(row.name), TransferStat())
        stat.time_s += row.total_ns / 1e9
        stat.count += round(row.events)
        counted_by_time.add(_direction(row.name))
    for row in [] if sizes is None else sizes.itertuples(index=False):
        key = _direction(row.name)
        stat = transfers.setdefault(key, TransferStat())
        stat.bytes += round(row.total_bytes)
        if key not in counted_by_time:  # both reports count the same operations; take the count once
            stat.count += round(row.events)
    return transfers


def _direction(operation: str) -> str:
    if "memset" in operation:
        return "memset"
    match = _MEMCPY.search(operation)
    if match is None:
        return "other"
    source, destination = ("host" if end in ("Host", "H") else "device" for end in match.groups())
    return f"{source}_to_{destination}" if f"{source}_to_{destination}" != "host_to_host" else "other"


def _nvtx_ranges(table: pd.DataFrame | None) -> list[NvtxRangeStat]:
    if table is None or table.empty:
        return []
    # nvtx_sum lists a range once per style (PushPop, StartEnd); one name is one range to a reader.
    names = table["name"].map(lambda name: name[1:] if name.startswith(":") else name)
    merged = table.assign(name=names).groupby("name", as_index=False)[["total_ns", "events"]].sum()
    ordered = merged.sort_values(["total_ns", "name"], ascending=[False, True]).head(NVTX_LIMIT)
    return [
        NvtxRangeStat(name=row.name, total_ns=round(row.total_ns), instances=round(row.events), mean_ns=row.total_ns / row.events if row.events else 0.0)
        for row in ordered.itertuples(index=False)
    ]


def _cuda_api(table: pd.DataFrame | None) -> list[CudaApiStat]:
    if table is None or table.empty:
        return []
    ordered = table.sort_values(["total_ns", "name"], ascending=[False, True]).head(TOP_LIMIT)
    return [CudaApiStat(name=row.name, total_ns=round(row.total_ns), calls=round(row.events)) for row in ordered.itertuples(index=False)]


def _hints(summary: NsysSummary, wall_s: float, data_bytes: int, result_bytes: int, rows: int, kernels_known: bool) -> list[str]:
    hints: list[str] = []
    if summary.kernel_launches == 0:
        if kernels_known:
            hints.append(
                "the GPU did no work: no CUDA kernel ran while the candidate executed, so it computed on the host (pandas/NumPy code, "
                "or a GPU library call that fell back to the CPU). Keep the data in cuDF/CuPy device objects and use their operations, "
                "or do not expect a GPU speedup from this candidate."
            )
        return hints
    mean_ns = summary.kernel_time_s * 1e9 / summary.kernel_launches
    if mean_ns < TINY_KERNEL_MEAN_NS and summary.kernel_launches >= TINY_KERNEL_MIN_LAUNCHES:
        per_million = f" ({summary.kernel_launches * 1_000_000 / rows:,.0f} per million rows)" if rows > 0 else ""
        hints.append(
            f"fuse: {summary.kernel_launches:,} kernel launches{per_million} averaging {mean_ns / 1000:.1f} µs each; each launch costs "
            f"about 5 µs of fixed overhead, as much as the work it does. Do more per launch: one expression instead of a chain of "
            f"column operations, a single custom kernel (numba.cuda.jit, cupy.ElementwiseKernel) for the whole row logic, no per-row "
            f"or per-element loops over device data, and larger batches."
        )
    device_to_host = summary.transfers["device_to_host"].bytes
    beyond_result = device_to_host - result_bytes
    if device_to_host >= ROUND_TRIP_MIN_BYTES and (
        (data_bytes > 0 and beyond_result >= ROUND_TRIP_INPUT_SHARE * data_bytes) or (result_bytes > 0 and device_to_host > ROUND_TRIP_RESULT_MULTIPLE * result_bytes)
    ):
        hints.append(
            f"a host round trip: {_megabytes(device_to_host)} came back from the GPU for a {_megabytes(result_bytes)} result and "
            f"{_megabytes(data_bytes)} of input, so data went to the host mid-computation (.to_pandas(), .values_host, .tolist(), "
            f"iterating a device column in Python, or an operation that falls back to the CPU) and likely back again. Keep every "
            f"step on the device and copy only the final result."
        )
    if summary.gpu_share is not None and summary.gpu_share < LOW_GPU_SHARE:
        copies_s = sum(summary.transfers[direction].time_s for direction in TRANSFER_DIRECTIONS)
        hints.append(
            f"Python- or transfer-bound: kernels ran for {summary.kernel_time_s * 1000:.1f} ms of the {wall_s * 1000:.1f} ms wall time "
            f"({summary.gpu_share:.0%}), with {copies_s * 1000:.1f} ms of host-device copies; the rest is host work (Python, data "
            f"conversion, synchronization). Faster kernels cannot help much: cut per-call Python work and conversions, avoid copies, "
            f"or hand the GPU more rows per call."
        )
    return hints


def _megabytes(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def _load_report(report: str, paths: dict[str, Path], notes: list[str]) -> tuple[pd.DataFrame | None, str]:
    """The report's rows (columns name, events, and total_ns + mean_ns or total_bytes) and how reading went.

    The status is "read", "missing", "empty" (an empty file or one nsys marked SKIPPED) or "unreadable"; only
    "read" comes with rows, and every other status adds a note.
    """
    path, found_as = _locate(report, paths)
    if path is None:
        notes.append(f"{report}: missing (no CSV was written: nsys had no such data, or the report did not run); counted as empty")
        return None, "missing"
    if found_as != report:
        notes.append(f"{report}: read from the older report name {found_as} ({path.name})")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        notes.append(f"{report}: unreadable ({exc.__class__.__name__}: {exc}); counted as empty")
        return None, "unreadable"
    lines = text.splitlines()
    header_at = next((index for index, line in enumerate(lines) if _is_header(line)), None)
    if header_at is None:
        skipped = next((line.strip() for line in lines if line.strip().startswith("SKIPPED")), None)
        if skipped is not None:
            notes.append(f"{report}: nsys skipped it ({skipped}); counted as empty")
            return None, "empty"
        if not text.strip():
            notes.append(f"{report}: empty file (nsys had no data for it); counted as empty")
            return None, "empty"
        notes.append(f"{report}: unreadable (no header row with a Name, Range or Operation column); counted as empty")
        return None, "unreadable"
    # The table ends at the first blank line: nsys separates reports (and trailing messages) that way.
    end = next((index for index in range(header_at + 1, len(lines)) if not lines[index].strip()), len(lines))
    try:
        raw = pd.read_csv(io.StringIO("\n".join(lines[header_at:end])), dtype=str, keep_default_na=False, skipinitialspace=True)
        return _normalize(report, raw), "read"
    except (ValueError, pd.errors.ParserError) as exc:
        notes.append(f"{report}: unreadable ({exc}); counted as empty")
        return None, "unreadable"


def _locate(report: str, paths: dict[str, Path]) -> tuple[Path | None, str]:
    candidates: list[tuple[Path, str]] = []
    for name in (report, *LEGACY_REPORT_NAMES[report]):
        if name in paths:
            candidates.append((Path(paths[name]), name))
    current = paths.get(report)
    suffix = f"_{report}.csv"
    if current is not None and Path(current).name.endswith(suffix):
        prefix = Path(current).name[: -len(suffix)]
        candidates += [(Path(current).with_name(f"{prefix}_{legacy}.csv"), legacy) for legacy in LEGACY_REPORT_NAMES[report]]
    return next(((path, name) for path, name in candidates if path.is_file()), (None, report))


def _is_header(line: str) -> bool:
    fields = next(csv.reader([line]), [])
    return len(fields) > 1 and any(field.strip() in ("Name", "Range", "Operation") for field in fields)


def _normalize(report: str, raw: pd.DataFrame) -> pd.DataFrame:
    columns: dict[str, pd.Series] = {}
    for header in raw.columns:
        match = _HEADER.match(str(header))
        key = _LABELS.get(match.group("label").lower()) if match else None
        wanted = _REQUIRED[report] + (("mean_ns",) if "total_ns" in _REQUIRED[report] else ())
        if key not in wanted or key in columns:
            continue
        unit = match.group("unit").strip().lower() if match.group("unit") else None
        if key == "name":
            columns[key] = raw[header].astype(str)
        elif key == "events":
            columns[key] = _numbers(raw[header])
        elif key == "total_bytes":
            if unit not in _BYTES_PER_UNIT:
                raise ValueError(f"size column {header!r} has an unknown unit")
            columns[key] = _numbers(raw[header]) * _BYTES_PER_UNIT[unit]
        else:
            if unit not in _NS_PER_UNIT:
                raise ValueError(f"time column {header!r} has an unknown unit")
            columns[key] = _numbers(raw[header]) * _NS_PER_UNIT[unit]
    missing = [key for key in _REQUIRED[report] if key not in columns]
    if missing:
        raise ValueError(f"no {', '.join(missing)} column among {list(raw.columns)}")
    table = pd.DataFrame(columns)
    if "total_ns" in table and "mean_ns" not in table:
        table["mean_ns"] = (table["total_ns"] / table["events"].where(table["events"] > 0)).fillna(0.0)
    return table


def _numbers(column: pd.Series) -> pd.Series:
    # Plain numbers in nsys CSV; the thousands separators of its column format are tolerated too.
    return pd.to_numeric(column.astype(str).str.replace(",", "", regex=False).str.strip(), errors="coerce").fillna(0.0)
