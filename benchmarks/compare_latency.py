"""Cold and warm latency of byte_compare on the bundled examples (20,000 hidden rows by default), confined and not.

Cold: a new worker pool, so new processes and new SparkSessions, as the first call after the
server starts. Warm: later calls on the same pool (fresh hidden rows every time). Each example
runs twice: with the candidate worker confined (Landlock and a PID namespace, as the server runs
it), and with confinement switched off (AETHER_MCP_UNCONFINED=1), alternating so a slow spell of
the machine hits both; the table gives the warm slowdown confinement costs. Prints a Markdown
table and the machine it ran on; `--json PATH` also writes the raw numbers.

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

    from aether_mcp.processes.confinement import DISABLE_ENV

    results = []
    for example, udf, arg_types, candidate in EXAMPLES:
        root_dir = Path(tempfile.mkdtemp(prefix="aether-bench-"))
        shutil.copytree(REPO / "examples" / example, root_dir / example)
        root = SandboxRoot(root_dir)
        ws = workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types).workspace
        files.write_file(root, ws, "tests/cases.py", (REPO / "examples" / example / "cases.py").read_text())
        files.write_file(root, ws, f"candidate/{candidate}.py", (REPO / "examples" / example / "candidates" / f"{candidate}.py").read_text())
        pools, cold, warm, first = {}, {}, {"confined": [], "unconfined": []}, None
        try:
            for mode in ("confined", "unconfined"):
                # confinement is decided when the worker starts: one pool per mode
                os.environ.pop(DISABLE_ENV, None) if mode == "confined" else os.environ.__setitem__(DISABLE_ENV, "1")
                pools[mode] = WorkerPool(forbidden=[root_dir])
                started = time.monotonic()
                result = byte_compare(root, pools[mode], ws, candidate, hidden_rows=args.hidden_rows)
                cold[mode] = time.monotonic() - started
                assert result.confined == (mode == "confined"), result.confinement
                first = first or result
                byte_compare(root, pools[mode], ws, candidate, hidden_rows=args.hidden_rows)  # JIT warm-up, discarded
            for _ in range(args.warm):
                for mode in ("confined", "unconfined"):
                    started = time.monotonic()
                    result = byte_compare(root, pools[mode], ws, candidate, hidden_rows=args.hidden_rows)
                    warm[mode].append(time.monotonic() - started)
                    assert result.equal, f"{example}: {result.mismatches[:2]}"
        finally:
            os.environ.pop(DISABLE_ENV, None)
            for pool in pools.values():
                pool.close()
            shutil.rmtree(root_dir, ignore_errors=True)
        confined, unconfined = statistics.median(warm["confined"]), statistics.median(warm["unconfined"])
        results.append(
            {
                "example": example,
                "candidate": f"{candidate} ({'spark-sql' if first.backend_note.startswith('spark-sql') else first.backend})",
                "rows_compared": first.rows_compared,
                "cold_confined_s": round(cold["confined"], 2),
                "cold_unconfined_s": round(cold["unconfined"], 2),
                "warm_confined_median_s": round(confined, 2),
                "warm_unconfined_median_s": round(unconfined, 2),
                "warm_confined_s": [round(v, 2) for v in warm["confined"]],
                "warm_unconfined_s": [round(v, 2) for v in warm["unconfined"]],
                "warm_slowdown": round(confined / unconfined - 1, 3),
            }
        )
        print(f"{example}: warm median {confined:.2f}s confined, {unconfined:.2f}s unconfined", file=sys.stderr, flush=True)
    shutil.rmtree(state, ignore_errors=True)

    print(f"Machine: {machine()}\n")
    print("| example | candidate | rows compared | cold confined / unconfined (s) | warm median confined (s) | warm median unconfined (s) | warm slowdown |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['example']} | {r['candidate']} | {r['rows_compared']} | {r['cold_confined_s']} / {r['cold_unconfined_s']} | "
            f"{r['warm_confined_median_s']} | {r['warm_unconfined_median_s']} | {r['warm_slowdown']:+.0%} |"
        )
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
