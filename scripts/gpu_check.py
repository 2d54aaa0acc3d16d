"""The GPU check: what this project's GPU code does on the machine it runs on, in one short run.

Runs with what the machine has and installs nothing. Every part either runs, or is listed as
"not run" with the reason; none is skipped silently:

1. environment: Python and library versions, which CuPy build (CUDA 12 or 13), cuDF, PySpark,
   PyTorch, nsys, and the source of device counters this machine gives `gpu_verified`.
2. first CUDA call: the device count through CuPy (else numba.cuda). When it fails, every part
   that needs the device says so.
3. haversine: the geo example at `--rows` (10M) as the row UDF's logic, NumPy, CuPy and the numba
   kernel, Arrow in and Arrow out, each compared with the row logic row by row (bit for bit, or
   ULP distance, with null, NaN and sign-of-zero mismatches apart). benchmarks/gpu_micro.py.
4. backend on the device: aether_mcp.backend's conversions from and to Arrow with null and NaN
   kept apart and -0.0 kept, the arrays on the device, and the allocator really in use.
5. device counters: the candidates' calls recorded by CUPTI (through PyTorch's profiler) and
   judged by the same code the server uses for `gpu_verified`, with two controls that must fail:
   a host-only candidate (no_device_work) and one that reads its result back row by row
   (host_round_trip). The traces are kept under --out.
6. Spark on the GPU backend: tests/test_gpu.py (byte_compare, run_tests, micro_benchmark and
   audit_candidate with backend "gpu", and nsys where it is on the PATH), where PySpark and the
   server's dependencies import.

Prints a Markdown report (ready for docs/backends.md) and one JSON summary; with --out DIR, writes
both there too (summary.json, report.md, the traces). Exit 0 when every part that ran passed,
1 when one failed. scripts/gpu_check.sh decides first whether there is a GPU to check.

    python scripts/gpu_check.py [--rows 10000000] [--out DIR] [--dry-run]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GEO = REPO / "examples" / "delivery_geo"
ROW_COPIES = REPO / "tests" / "red_team" / "candidates" / "haversine_km" / "cheat_row_copies.py"
# CUDA's libdevice sin/cos/asin differ from the host's libm in the last bits, and asin near 1 magnifies that
# to hundreds or thousands of ULPs (measured on an H200: up to 1,413). A GPU port passes this check when it
# agrees to 12 significant digits; byte_compare still calls such a port unequal, as it should.
MAX_RELATIVE = 1e-12
SPARK_TIMEOUT_S = 170


class NotRun(Exception):
    """This part cannot run on this machine; the message says why."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the haversine comparison (default 10M)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--counter-rows", type=int, default=100_000, help="rows per recorded call (the server records 100,000)")
    parser.add_argument("--out", type=Path, help="also write summary.json, report.md and the recorded traces here")
    parser.add_argument("--dry-run", action="store_true", help="run where there is no GPU: everything up to the first CUDA call")
    parser.add_argument("--no-spark", action="store_true", help="leave out the Spark part even where PySpark is installed")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    out = args.out
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    context: dict[str, Any] = {"args": args, "out": out, "cuda": None}
    summary: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "dry_run": args.dry_run,
        "parts": {},
    }
    for key, title, part in PARTS:
        began = time.perf_counter()
        entry: dict[str, Any] = {"title": title}
        try:
            entry.update(status="ran", **part(context))
        except NotRun as reason:
            entry.update(status="not run", reason=str(reason))
        except Exception as exc:  # a part that breaks is reported, and the others still run
            entry.update(status="failed", passed=False, error=f"{exc.__class__.__name__}: {exc}"[:800], traceback=traceback.format_exc()[-2000:])
        entry["seconds"] = round(time.perf_counter() - began, 2)
        summary["parts"][key] = entry
        context[key] = entry
        print(f"gpu_check: {title}: {entry['status']}{' (' + entry['reason'] + ')' if entry.get('reason') else ''} in {entry['seconds']} s", file=sys.stderr, flush=True)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary["passed"] = all(entry.get("passed", True) for entry in summary["parts"].values() if entry["status"] != "not run")
    summary["not_run"] = {key: entry["reason"] for key, entry in summary["parts"].items() if entry["status"] == "not run"}
    report = "\n".join(markdown(summary, context.get("haversine_markdown", [])))
    print(report)
    print("\nJSON summary:")
    print(json.dumps(summary, default=str))
    if out is not None:
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
        (out / "report.md").write_text(report + "\n", encoding="utf-8")
    return 0 if summary["passed"] else 1


# --- the parts --------------------------------------------------------------------------------


def environment(context: dict[str, Any]) -> dict[str, Any]:
    from aether_mcp import backend
    from aether_mcp.parsers import device_counters

    found = {name: _version(name) for name in ("numpy", "pandas", "pyarrow", "numba", "numba-cuda", "cupy", "cudf", "pyspark", "mcp", "pydantic", "torch")}
    package = backend.cupy_package()
    source = device_counters.choose_source()
    info: dict[str, Any] = {
        "python": f"{platform.python_version()} ({sys.executable})",
        "machine": f"{os.cpu_count()} cores ({_cpu_name()}), {platform.system()} {platform.release()}",
        "packages": found,
        "cupy_package": package or "not installed",
        "cupy_cuda_major": backend.cuda_major(package),
        "gpu_devices": sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*")),
        "nsys": shutil.which("nsys") or "not on the PATH",
        "counter_source": source.name or "none",
        "counter_source_detail": source.detail,
    }
    if shutil.which("nvidia-smi"):
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
            info["nvidia_smi"] = (smi.stdout or smi.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            info["nvidia_smi"] = f"failed: {exc}"
    return {"passed": True, **info}


def first_cuda_call(context: dict[str, Any]) -> dict[str, Any]:
    """The device count: the first call into CUDA. Its failure is the reason every device part gives."""
    if importlib.util.find_spec("cupy") is not None:
        try:
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
            properties = cupy.cuda.runtime.getDeviceProperties(0)
            name = properties["name"].decode() if isinstance(properties["name"], bytes) else str(properties["name"])
            context["cuda"] = f"{count} device(s), device 0: {name}"
            return {"passed": True, "through": "cupy", "devices": count, "device": name,
                    "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(), "cuda_driver": cupy.cuda.runtime.driverGetVersion()}
        except Exception as exc:
            context["cuda_error"] = f"the first CUDA call (through CuPy) failed: {exc.__class__.__name__}: {exc}"
            _no_device(context)
    if importlib.util.find_spec("numba") is not None and importlib.util.find_spec("numba.cuda") is not None:
        from numba import cuda

        if not cuda.is_available():
            context["cuda_error"] = "the first CUDA call (through numba.cuda) failed: no CUDA driver or device (numba.cuda.is_available() is false)"
            _no_device(context)
        context["cuda_error"] = "CuPy is not installed (the GPU backend needs it; numba.cuda sees a device)"
        raise NotRun(context["cuda_error"])
    context["cuda_error"] = "neither CuPy nor numba-cuda is installed, so nothing can call CUDA"
    raise NotRun(context["cuda_error"])


def haversine(context: dict[str, Any]) -> dict[str, Any]:
    from aether_mcp import backend

    micro = _load(REPO / "benchmarks" / "gpu_micro.py", "gpu_micro")
    args = context["args"]
    problem = None if context.get("cuda") else context.get("cuda_error", "the first CUDA call was not made")
    problem = problem or backend.gpu_problem("kernel")
    table = micro.variants(args.rows, args.repeats, gpu_problem=problem or "")
    failed = []
    for entry in table[1:]:
        comparison = entry["comparison"]
        if entry["note"].startswith("failed"):
            failed.append(f"{entry['label']}: {entry['note']}")
        elif comparison is not None:
            if micro.structural(comparison):
                failed.append(f"{entry['label']}: {entry['note']}")
            elif entry["backend"] == "cpu" and not comparison["bit_for_bit"]:
                failed.append(f"{entry['label']}: the CPU backend must be bit for bit ({entry['note']})")
            elif comparison.get("max_relative", 0.0) > MAX_RELATIVE:
                failed.append(f"{entry['label']}: relative difference {comparison['max_relative']:.1e} exceeds {MAX_RELATIVE:.0e} ({comparison['max_ulp']} ULP)")
    context["haversine_markdown"] = micro.markdown(table, args.rows)
    return {"passed": not failed, "problems": failed, "rows": args.rows, "repeats": args.repeats, "variants": table}


def backend_on_device(context: dict[str, Any]) -> dict[str, Any]:
    """The conversions every GPU run goes through, and the allocator, checked on the device."""
    _need_device(context)
    import numpy as np
    import pyarrow as pa

    from aether_mcp import backend

    active = backend.activate("gpu")
    xp = active.xp
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        checks.append({"check": name, "ok": bool(ok), **({"detail": detail} if detail else {})})

    floats = pa.array([1.5, None, float("nan"), -0.0, float("inf"), 7.25], pa.float64())
    column = backend.from_arrow(floats)
    check("from_arrow gives cuDF on the device where cuDF is installed, else pandas", type(column).__module__.split(".")[0] == ("cudf" if active.xdf is not None else "pandas"), type(column).__module__)
    values = backend.array(column, "float64", na_value=float("nan"))
    check("array() is a CuPy array on the device", isinstance(values, xp.ndarray), type(values).__name__)
    host = xp.asnumpy(values)
    check("array(): null becomes na_value, NaN stays NaN, -0.0 keeps its sign", host[0] == 1.5 and np.isnan(host[1]) and np.isnan(host[2]) and np.signbit(host[3]) and host[4] == np.inf, repr(host.tolist()))
    null = xp.asarray(np.array([False, True, False, False, False, False]))
    back = backend.to_arrow(backend.series(values, null=null), pa.float64())
    check("series() + to_arrow(): null and NaN apart on the way back", back.is_null().to_pylist() == [False, True, False, False, False, False] and np.isnan(back[2].as_py()), str(back.to_pylist()))
    check("to_arrow() keeps -0.0 and bits", np.array(back.to_pylist()[3]).view(np.int64) == np.array(-0.0).view(np.int64) and back[5].as_py() == 7.25)
    ints = pa.array([3, None, -7], pa.int64())
    int_values = backend.array(backend.from_arrow(ints), "int64", na_value=0)
    int_back = backend.to_arrow(backend.series(int_values, null=xp.asarray(np.array([False, True, False]))), pa.int64())
    check("int64 with nulls round-trips", int_back.to_pylist() == [3, None, -7], str(int_back.to_pylist()))
    flags = pa.array([True, None, False], pa.bool_())
    flag_values = backend.array(backend.from_arrow(flags), "bool", na_value=False)
    flag_back = backend.to_arrow(backend.series(flag_values, null=xp.asarray(np.array([False, True, False]))), pa.bool_())
    check("booleans with nulls round-trip", flag_back.to_pylist() == [True, None, False], str(flag_back.to_pylist()))
    raw = backend.to_arrow(xp.asarray(np.array([2.0, float("nan")])), pa.float64())
    check("a bare CuPy result comes back as Arrow with NaN as a value, not null", raw.null_count == 0 and np.isnan(raw[1].as_py()), str(raw.to_pylist()))
    allocator = backend.allocator()
    if active.pool is not None:
        before = active.pool.used_bytes()
        block = xp.empty(1 << 20, dtype=xp.uint8)
        grown = active.pool.used_bytes() - before
        check("CuPy's allocations go through the pool the backend set", grown >= 1 << 20, f"{grown} bytes more in use after a 1 MiB allocation")
        del block
    else:
        check("the RMM pool is the allocator", "rmm" in str(allocator.get("cupy", "")), str(allocator))
    device = backend.device_info()
    backend.activate("cpu")
    return {"passed": all(c["ok"] for c in checks), "checks": checks, "allocator": allocator, "device": device}


def counters(context: dict[str, Any]) -> dict[str, Any]:
    """Each case recorded as the server records it, judged as the server judges it; the two controls must be failed."""
    _need_device(context)
    from aether_mcp.parsers import device_counters

    source = device_counters.choose_source()
    if importlib.util.find_spec("torch") is None:
        raise NotRun(f"PyTorch is not installed, so CUPTI cannot be read here; {source.detail if source.name is None else 'device counters come from ' + source.detail}")
    args = context["args"]
    rows = args.counter_rows
    cases = [
        ("vectorized candidate (CuPy)", "haversine_vectorized", GEO / "candidates" / "haversine_vectorized.py", rows, "verified"),
        ("kernel candidate (numba.cuda)", "haversine_kernel", GEO / "candidates" / "haversine_kernel.py", rows, "verified"),
        ("control: computes on the host", "host_only", None, rows, "no_device_work"),
        ("control: result read back row by row", "row_copies", ROW_COPIES, min(rows, 5_000), "host_round_trip"),
    ]
    folder = args.out or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    results = []
    for label, key, path, case_rows, expected in cases:
        trace = folder / f"cupti_{key}.json.gz"
        recorded = _record(path, case_rows, trace)
        parsed = device_counters.parse_kineto_trace(trace)
        problems = device_counters.problems(parsed, case_rows, recorded["calls"], recorded["result_bytes"])
        verdict = "incomplete" if not parsed.complete else ",".join(rule for rule, _ in problems) or "verified"
        results.append({
            "case": label, "rows": case_rows, "calls": recorded["calls"], "expected": expected, "verdict": verdict, "as_expected": verdict == expected,
            "kernel_launches": parsed.kernel_launches, "launch_calls": parsed.launch_calls, "probe_seen": parsed.probe_seen,
            "host_to_device_bytes": parsed.transfer("host_to_device").bytes, "device_to_host_copies": parsed.transfer("device_to_host").count,
            "device_to_host_bytes": parsed.transfer("device_to_host").bytes, "result_bytes": recorded["result_bytes"], "notes": parsed.notes,
            "trace": str(trace) if args.out else "(deleted; pass --out to keep)", "recorder": recorded["recorder"],
        })
    if args.out is None:
        shutil.rmtree(folder, ignore_errors=True)
    return {"passed": all(r["as_expected"] for r in results), "source": "cupti", "source_on_this_machine": source.name, "cases": results}


def spark(context: dict[str, Any]) -> dict[str, Any]:
    missing = [name for name in ("pyspark", "mcp", "pydantic", "pytest") if importlib.util.find_spec(name) is None]
    if missing:
        raise NotRun(
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: byte_compare, run_tests, micro_benchmark and "
            "audit_candidate on the GPU backend (tests/test_gpu.py, with nsys where it is on the PATH) run through Spark and the server"
        )
    if context["args"].no_spark:
        raise NotRun("--no-spark was given")
    _need_device(context)
    argv = [sys.executable, "-m", "pytest", str(REPO / "tests" / "test_gpu.py"), "-m", "gpu", "-rs", "-q", "-p", "no:cacheprovider"]
    try:
        ended = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=SPARK_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        return {"passed": False, "error": f"tests/test_gpu.py did not finish in {SPARK_TIMEOUT_S} s", "tail": str(exc.stdout or "")[-3000:]}
    tail = (ended.stdout + ended.stderr)[-3000:]
    if context["out"] is not None:
        (context["out"] / "test_gpu.log").write_text(ended.stdout + ended.stderr, encoding="utf-8")
    return {"passed": ended.returncode == 0, "returncode": ended.returncode, "summary": tail.strip().splitlines()[-1] if tail.strip() else "", "tail": tail}


PARTS: list[tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
    ("environment", "environment", environment),
    ("first_cuda_call", "first CUDA call", first_cuda_call),
    ("haversine", "haversine: row logic, NumPy, CuPy, numba kernel", haversine),
    ("backend", "aether_mcp.backend on the device", backend_on_device),
    ("counters", "device counters (CUPTI) and gpu_verified", counters),
    ("spark", "Spark on the GPU backend (tests/test_gpu.py)", spark),
]


# --- helpers ----------------------------------------------------------------------------------


def _need_device(context: dict[str, Any]) -> None:
    if not context.get("cuda"):
        raise NotRun(f"needs the device: {context.get('cuda_error', 'the first CUDA call was not made')}")


def _no_device(context: dict[str, Any]) -> None:
    """The first CUDA call failed: expected in a dry run, a failure on a machine that has a GPU."""
    if context["args"].dry_run:
        raise NotRun(context["cuda_error"])
    raise RuntimeError(context["cuda_error"])


def _record(path: Path | None, rows: int, trace: Path) -> dict[str, Any]:
    """One case as the server's device check runs it: columns to the device, a warm-up call and one more, all recorded."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from aether_mcp import backend
    from aether_mcp.arrow_pandas import column_to_series
    from aether_mcp.parsers import device_counters

    micro = _load(REPO / "benchmarks" / "gpu_micro.py", "gpu_micro")
    cols = micro.columns(rows, seed=11)
    backend.activate("gpu")
    if path is None:  # the host-only control: NumPy on pandas columns, whatever the backend

        def evaluate(*series: Any) -> Any:
            lat1, lon1, lat2, lon2 = (s.to_numpy(dtype="float64", na_value=np.nan) for s in series)
            return pd.Series(np.hypot(lat2 - lat1, lon2 - lon1))

        convert: Callable[[Any], Any] = column_to_series
    else:
        evaluate = _load(path, f"counted_{path.stem}").evaluate
        convert = backend.from_arrow
    calls = 2  # as the server's device check: a warm-up call and one more
    raw = trace.with_suffix("")  # torch writes plain JSON; kept gzipped
    with device_counters.cupti_recording(raw) as recorder:
        series = [convert(c) for c in cols]
        result = None
        for _ in range(calls):
            result = evaluate(*series)
            backend.synchronize()
        result_bytes = backend.to_arrow(result, pa.float64()).nbytes
    with open(raw, "rb") as source, gzip.open(trace, "wb") as target:
        shutil.copyfileobj(source, target)
    raw.unlink()
    backend.activate("cpu")
    return {"calls": calls, "result_bytes": result_bytes, "recorder": recorder["recorder"]}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _version(distribution: str) -> str:
    from importlib import metadata

    if distribution == "cupy":
        from aether_mcp import backend

        return backend.cupy_package() or "not installed"
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_name() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def markdown(summary: dict[str, Any], haversine_table: list[str]) -> list[str]:
    parts = summary["parts"]
    env = parts["environment"]
    device = (parts["first_cuda_call"].get("device") if parts["first_cuda_call"]["status"] == "ran" else None) or "no usable GPU"
    lines = [
        f"GPU check, {summary['date']}{' (dry run)' if summary['dry_run'] else ''}: {device}; {env.get('machine', '')}; "
        f"Python {platform.python_version()}, CuPy {env.get('cupy_package', '?')}, counters: {env.get('counter_source', '?')}",
        "",
        "| part | status | seconds | result |",
        "|---|---|---:|---|",
    ]
    for entry in parts.values():
        if entry["status"] == "not run":
            result = f"not run: {entry['reason']}"
        elif entry["status"] == "failed":
            result = f"failed: {entry['error']}"
        else:
            result = "passed" if entry.get("passed", True) else "FAILED: " + "; ".join(entry.get("problems", []) or [c["check"] for c in entry.get("checks", []) if not c["ok"]] or [str(entry.get("summary", ""))])
        lines.append(f"| {entry['title']} | {entry['status']} | {entry['seconds']} | {result.replace('|', '/')} |")
    if parts["haversine"]["status"] == "ran":
        lines += ["", f"haversine on {parts['haversine']['rows']:,} rows, median of {parts['haversine']['repeats']} after a warm-up (row logic: one run); Arrow in, Arrow out", ""]
        lines += haversine_table
    if parts["counters"]["status"] == "ran":
        lines += ["", "| recorded case | rows x calls | kernels | H2D MB | D2H copies | D2H MB | verdict | expected |", "|---|---:|---:|---:|---:|---:|---|---|"]
        for case in parts["counters"]["cases"]:
            lines.append(
                f"| {case['case']} | {case['rows']:,} x {case['calls']} | {case['kernel_launches']:,} | {case['host_to_device_bytes'] / 1e6:.1f} | "
                f"{case['device_to_host_copies']:,} | {case['device_to_host_bytes'] / 1e6:.1f} | {case['verdict']} | {case['expected']} |"
            )
    return lines


if __name__ == "__main__":
    sys.exit(main())
