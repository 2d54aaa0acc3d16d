"""Cold and warm latency of byte_compare on the bundled examples (20,000 hidden rows by default).

Cold: a new worker pool, so new processes and new SparkSessions, as the first call after the
server starts. Warm: later calls on the same pool (fresh hidden rows every time). Prints a
Markdown table and the machine it ran on; `--json PATH` also writes the raw numbers.

    .venv/bin/python benchmarks/compare_latency.py [--warm 5] [--hidden-rows 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = [
    ("loyalty_pricing", "loyalty_discount", {"age": "int"}, "discount_sql"),
    ("contact_cleanup", "normalize_email", {"raw": "string"}, "email_vectorized"),
    ("delivery_geo", "haversine_km", {"lat1": "double", "lon1": "double", "lat2": "double", "lon2": "double"}, "haversine_vectorized"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=5, help="warm calls per example (after one discarded warm-up)")
    parser.add_argument("--hidden-rows", type=int, default=20_000)
    parser.add_argument("--json", default=None, help="also write the raw numbers here")
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="aether-bench-state-")
    os.environ["AETHER_MCP_STATE_DIR"] = state

    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.tools import files, workspaces
    from aether_mcp.tools.byte_compare import byte_compare

    results = []
    for example, udf, arg_types, candidate in EXAMPLES:
        root_dir = Path(tempfile.mkdtemp(prefix="aether-bench-"))
        shutil.copytree(REPO / "examples" / example, root_dir / example)
        root = SandboxRoot(root_dir)
        ws = workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types).workspace
        files.write_file(root, ws, "tests/cases.py", (REPO / "examples" / example / "cases.py").read_text())
        files.write_file(root, ws, f"candidate/{candidate}.py", (REPO / "examples" / example / "candidates" / f"{candidate}.py").read_text())
        pool = WorkerPool()
        try:
            started = time.monotonic()
            first = byte_compare(root, pool, ws, candidate, hidden_rows=args.hidden_rows)
            cold = time.monotonic() - started
            byte_compare(root, pool, ws, candidate, hidden_rows=args.hidden_rows)  # JIT warm-up, discarded
            warm = []
            for _ in range(args.warm):
                started = time.monotonic()
                result = byte_compare(root, pool, ws, candidate, hidden_rows=args.hidden_rows)
                warm.append(time.monotonic() - started)
                assert result.equal, f"{example}: {result.mismatches[:2]}"
        finally:
            pool.close()
            shutil.rmtree(root_dir, ignore_errors=True)
        results.append(
            {
                "example": example,
                "candidate": f"{candidate} ({first.backend.split(':')[0]})",
                "rows_compared": first.rows_compared,
                "cold_s": round(cold, 2),
                "warm_median_s": round(statistics.median(warm), 2),
                "warm_min_s": round(min(warm), 2),
                "warm_max_s": round(max(warm), 2),
                "cold_over_warm": round(cold / statistics.median(warm), 1),
            }
        )
        print(f"{example}: cold {cold:.1f}s, warm median {statistics.median(warm):.2f}s", file=sys.stderr, flush=True)
    shutil.rmtree(state, ignore_errors=True)

    print(f"Machine: {machine()}\n")
    print("| example | candidate | rows compared | cold (s) | warm median (s) | warm min-max (s) | cold / warm |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['example']} | {r['candidate']} | {r['rows_compared']} | {r['cold_s']} | {r['warm_median_s']} | {r['warm_min_s']}-{r['warm_max_s']} | {r['cold_over_warm']}x |")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results}, indent=2))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), platform.processor())
    memory_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), 0)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    import pyspark

    return f"{os.cpu_count()} cores ({cpu}), {memory_kb // 1024 // 1024} GiB, Python {platform.python_version()}, {java}, PySpark {pyspark.__version__}"


if __name__ == "__main__":
    main()
