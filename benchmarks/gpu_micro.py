"""The geo example's haversine four ways, on the same rows: the row UDF's logic, NumPy, CuPy, a numba kernel.

Each variant is timed from Arrow columns in to an Arrow result out, which is the work one Spark
batch costs it (a GPU variant includes the copies to and from the device). Each is timed once
as a warm-up, then `--repeats` times, and the median is shown. Every variant's result is compared
with the row UDF's, row by row: a different null, NaN or sign counts as a mismatch; floats that
differ only in their last bits are counted and their largest distance in ULPs is shown.

    .venv/bin/python benchmarks/gpu_micro.py [--rows 10000000] [--repeats 3]

Without a GPU (or without CuPy/numba-cuda) the GPU rows say why they were not run. Nothing is
downloaded: the data is generated here, and PySpark is not needed (the row logic is read from
the job's source). scripts/gpu_check.py runs the same variants as one part of the GPU check.
"""

from __future__ import annotations

import argparse
import ast
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


def row_logic():
    """The job's own row function, `_haversine`, taken from its source with the module constants it reads.

    The job itself imports PySpark at the top, which the GPU machines may not have; the row logic needs only `math`.
    """
    tree = ast.parse((GEO / "job.py").read_text(encoding="utf-8"))
    kept = [
        node for node in tree.body
        if (isinstance(node, ast.Import) and all(alias.name == "math" for alias in node.names))
        or (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant))
        or (isinstance(node, ast.FunctionDef) and node.name == "_haversine")
    ]
    namespace: dict = {}
    exec(compile(ast.Module(body=kept, type_ignores=[]), str(GEO / "job.py"), "exec"), namespace)
    return namespace["_haversine"]


def row_udf(cols: list[pa.Array]) -> pa.Array:
    """The original's logic one row at a time, as a row UDF runs it (the pandas UDF hands it NaN for null)."""
    haversine = row_logic()
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


def compare(expected: pa.Array, actual: pa.Array) -> dict:
    """Row by row: bit for bit, else how many rows differ by how many ULPs, with null, NaN and sign-of-zero mismatches apart."""
    e_null = expected.is_null().to_numpy(zero_copy_only=False)
    a_null = actual.is_null().to_numpy(zero_copy_only=False)
    e = expected.to_numpy(zero_copy_only=False).astype("float64")
    a = actual.to_numpy(zero_copy_only=False).astype("float64")
    both = ~e_null & ~a_null
    bits_e, bits_a = e.view(np.int64), a.view(np.int64)
    nan_e, nan_a = np.isnan(e) & both, np.isnan(a) & both
    nan = nan_e != nan_a
    zero = both & (e == 0) & (a == 0) & (np.signbit(e) != np.signbit(a))
    sign = both & ~nan & ~nan_e & (e != 0) & (a != 0) & (np.signbit(e) != np.signbit(a))
    numeric = both & ~nan_e & ~nan_a & ~zero & ~sign & (bits_e != bits_a)
    ulps = np.abs(bits_e[numeric] - bits_a[numeric])
    relative = np.abs(e[numeric] - a[numeric]) / np.maximum(np.abs(e[numeric]), np.finfo(np.float64).tiny)
    return {
        "rows": len(expected),
        "bit_for_bit": bool(((e_null == a_null) & (~both | (bits_e == bits_a) | (nan_e & nan_a))).all()),
        "null_mismatches": int((e_null != a_null).sum()),
        "nan_mismatches": int(nan.sum()),
        "sign_of_zero_mismatches": int(zero.sum()),
        "sign_mismatches": int(sign.sum()),
        "ulp_rows": int(numeric.sum()),
        "max_ulp": int(ulps.max()) if ulps.size else 0,
        "max_relative": float(relative.max()) if relative.size else 0.0,
    }


def describe(comparison: dict) -> str:
    if comparison["bit_for_bit"]:
        return "bit for bit"
    parts = [f"{comparison['ulp_rows']:,} rows off by <= {comparison['max_ulp']} ULP (relative <= {comparison.get('max_relative', 0.0):.1e})"] if comparison["ulp_rows"] else []
    for key, label in (("null_mismatches", "null"), ("nan_mismatches", "NaN"), ("sign_of_zero_mismatches", "sign-of-zero"), ("sign_mismatches", "sign")):
        if comparison[key]:
            parts.append(f"{comparison[key]:,} {label} mismatches")
    return "; ".join(parts)


def structural(comparison: dict) -> int:
    """Mismatches no floating-point tolerance excuses: null, NaN and sign."""
    return comparison["null_mismatches"] + comparison["nan_mismatches"] + comparison["sign_of_zero_mismatches"] + comparison["sign_mismatches"]


def variants(rows: int, repeats: int, gpu_problem: str | None = None) -> list[dict]:
    """Every variant on the same `rows`, each as {label, backend, seconds, comparison, note}; seconds None when not run.

    `gpu_problem`: why the GPU rows cannot run here (default: aether_mcp.backend.gpu_problem("kernel")).
    """
    from aether_mcp import backend

    cols = columns(rows)
    began = time.perf_counter()
    expected = row_udf(cols)
    row_s = time.perf_counter() - began
    table = [{"label": "row UDF logic (Python, one row at a time)", "backend": "cpu", "seconds": row_s, "comparison": None, "note": "reference"}]

    def variant(label: str, chosen: str, candidate: str) -> None:
        backend.activate(chosen)
        module = load(GEO / "candidates" / f"{candidate}.py", f"{candidate}_{chosen}")

        def run() -> pa.Array:
            return backend.to_arrow(module.evaluate(*[backend.from_arrow(c) for c in cols]), pa.float64())

        try:
            seconds, result = timed(run, repeats, backend.synchronize)
        except Exception as exc:  # one variant's failure is a row of the table, not the end of it
            table.append({"label": label, "backend": chosen, "seconds": None, "comparison": None, "note": f"failed: {exc.__class__.__name__}: {exc}"[:300]})
            return
        comparison = compare(expected, result)
        table.append({"label": label, "backend": chosen, "seconds": seconds, "comparison": comparison, "note": describe(comparison)})

    variant("NumPy (vectorized candidate, CPU backend)", "cpu", "haversine_vectorized")
    problem = gpu_problem if gpu_problem is not None else backend.gpu_problem("kernel")
    gpu_labels = ("CuPy (vectorized candidate, GPU backend)", "numba.cuda kernel (GPU backend)")
    if problem:
        table += [{"label": label, "backend": "gpu", "seconds": None, "comparison": None, "note": f"not run: {problem}"} for label in gpu_labels]
    else:
        cudf = importlib.util.find_spec("cudf") is not None
        variant(f"CuPy (vectorized candidate, GPU backend{', cuDF columns' if cudf else ', no cuDF: pandas columns copied'})", "gpu", "haversine_vectorized")
        variant("numba.cuda kernel (GPU backend)", "gpu", "haversine_kernel")
        if not cudf:
            table.append({"label": "cuDF columns", "backend": "gpu", "seconds": None, "comparison": None,
                          "note": "not run: cuDF is not installed (the rows above copy pandas columns to the device)"})
    backend.activate("cpu")
    return table


def markdown(table: list[dict], rows: int) -> list[str]:
    row_s = table[0]["seconds"]
    lines = ["| variant | backend | seconds | Mrows/s | vs row UDF | result vs row UDF |", "|---|---|---:|---:|---:|---|"]
    for entry in table:
        seconds = entry["seconds"]
        if seconds is None:
            lines.append(f"| {entry['label']} | {entry['backend']} | - | - | - | {entry['note']} |")
        else:
            lines.append(f"| {entry['label']} | {entry['backend']} | {seconds:.3f} | {rows / seconds / 1e6:.1f} | {row_s / seconds:.1f}x | {entry['note']} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    started = time.perf_counter()
    table = variants(args.rows, args.repeats)
    print(f"\nhaversine on {args.rows:,} rows; median of {args.repeats} after a warm-up (row UDF: one run); Arrow in, Arrow out")
    print(f"machine: {machine()}\n")
    print("\n".join(markdown(table, args.rows)))
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
