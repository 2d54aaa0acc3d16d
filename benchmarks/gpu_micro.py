"""The geo example's haversine four ways, on the same rows: the row UDF's logic, NumPy, CuPy, a numba kernel.

Each variant is timed from Arrow columns in to an Arrow result out, which is the work one Spark
batch costs it (a GPU variant includes the copies to and from the device). Each is timed once
as a warm-up, then `--repeats` times, and the median is shown. Every variant's result is compared
with the row UDF's, row by row: a different null, NaN or sign counts as a mismatch; floats that
differ only in their last bits are counted and their largest distance in ULPs is shown.

    .venv/bin/python benchmarks/gpu_micro.py [--rows 10000000] [--repeats 3]

Without a GPU (or without CuPy/numba-cuda) the GPU rows say why they were skipped. Nothing is
downloaded: the data is generated here.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
REPO = Path(__file__).resolve().parents[1]
GEO = REPO / "examples" / "delivery_geo"


def columns(rows: int, seed: int = 7) -> list[pa.Array]:
    """Coordinates in degrees, 1% out of range, 0.5% NaN and 0.5% null per column."""
    rng = np.random.default_rng(seed)
    out = []
    for limit in (90.0, 180.0, 90.0, 180.0):
        values = rng.uniform(-limit, limit, rows)
        values[rng.random(rows) < 0.01] *= 3.0
        values[rng.random(rows) < 0.005] = np.nan
        out.append(pa.array(values, pa.float64(), mask=rng.random(rows) < 0.005))
    return out


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row_udf(cols: list[pa.Array]) -> pa.Array:
    """The original's logic one row at a time, as a row UDF runs it (the pandas UDF hands it NaN for null)."""
    haversine = load(GEO / "job.py", "geo_job")._haversine
    lists = [c.to_numpy(zero_copy_only=False) for c in cols]  # nulls become NaN, as Spark gives a pandas UDF
    return pa.array([haversine(*row) for row in zip(*(a.tolist() for a in lists))], pa.float64())


def timed(run, repeats: int, synchronize) -> tuple[float, pa.Array]:
    result = run()
    synchronize()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        synchronize()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def compare(expected: pa.Array, actual: pa.Array) -> str:
    e_null = expected.is_null().to_numpy(zero_copy_only=False)
    a_null = actual.is_null().to_numpy(zero_copy_only=False)
    e = expected.to_numpy(zero_copy_only=False).astype("float64")
    a = actual.to_numpy(zero_copy_only=False).astype("float64")
    both = ~e_null & ~a_null
    bits_e, bits_a = e.view(np.int64), a.view(np.int64)
    exact = (e_null == a_null) & (~both | (bits_e == bits_a))
    if exact.all():
        return "bit for bit"
    differs = both & (bits_e != bits_a)
    structural = (e_null != a_null) | (differs & (np.isnan(e) | np.isnan(a) | (np.signbit(e) != np.signbit(a))))
    ulps = np.abs(bits_e[differs & ~structural] - bits_a[differs & ~structural])
    text = f"{int(differs.sum() - structural.sum()):,} rows off by <= {int(ulps.max()) if ulps.size else 0} ULP"
    return text + (f"; {int(structural.sum()):,} null/NaN/sign mismatches" if structural.any() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from aether_mcp import backend

    cols = columns(args.rows)
    table: list[tuple[str, str, float | None, str]] = []
    started = time.perf_counter()
    began = time.perf_counter()
    expected = row_udf(cols)
    row_s = time.perf_counter() - began
    table.append(("row UDF logic (Python, one row at a time)", "cpu", row_s, "reference"))

    def variant(label: str, chosen: str, candidate: str) -> None:
        backend.activate(chosen)
        module = load(GEO / "candidates" / f"{candidate}.py", f"{candidate}_{chosen}")

        def run() -> pa.Array:
            return backend.to_arrow(module.evaluate(*[backend.from_arrow(c) for c in cols]), pa.float64())

        seconds, result = timed(run, args.repeats, backend.synchronize)
        table.append((label, chosen, seconds, compare(expected, result)))

    variant("NumPy (vectorized candidate, CPU backend)", "cpu", "haversine_vectorized")
    problem = backend.gpu_problem("kernel")
    if problem:
        table.append(("CuPy (vectorized candidate, GPU backend)", "gpu", None, f"skipped: {problem}"))
        table.append(("numba.cuda kernel (GPU backend)", "gpu", None, f"skipped: {problem}"))
    else:
        cudf = importlib.util.find_spec("cudf") is not None
        variant(f"CuPy (vectorized candidate, GPU backend{', cuDF columns' if cudf else ', no cuDF: pandas columns copied'})", "gpu", "haversine_vectorized")
        variant("numba.cuda kernel (GPU backend)", "gpu", "haversine_kernel")
        if not cudf:
            table.append(("cuDF columns", "gpu", None, "skipped: cudf-cu12 is not installed (the rows above copy pandas columns to the device)"))
        table.append(("allocator", "gpu", None, str(backend.allocator())))

    print(f"\nhaversine on {args.rows:,} rows; median of {args.repeats} after a warm-up (row UDF: one run); Arrow in, Arrow out")
    print(f"machine: {machine()}\n")
    print("| variant | backend | seconds | Mrows/s | vs row UDF | result vs row UDF |")
    print("|---|---|---:|---:|---:|---|")
    for label, chosen, seconds, note in table:
        if seconds is None:
            print(f"| {label} | {chosen} | - | - | - | {note} |")
        else:
            print(f"| {label} | {chosen} | {seconds:.3f} | {args.rows / seconds / 1e6:.1f} | {row_s / seconds:.1f}x | {note} |")
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), platform.processor())
    gpu = ""
    if importlib.util.find_spec("cupy") is not None and any(Path("/dev").glob("nvidia[0-9]*")):
        try:
            import cupy

            gpu = ", GPU " + cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception as exc:  # a broken driver is worth printing, not worth failing the table for
            gpu = f", GPU unusable ({exc.__class__.__name__})"
    return f"{os.cpu_count()} cores ({cpu}){gpu}, Python {platform.python_version()}, NumPy {np.__version__}"


if __name__ == "__main__":
    sys.exit(main())
