"""Cold and warm latency of byte_compare and warm latency of audit_candidate on the bundled examples, confined and not.

Cold: a new worker pool, so new processes and new SparkSessions, as the first call when the
workers start on first use. After warm start: a new pool whose workers the server started in the
background (WorkerPool.warm_start, as `aether-mcp serve` does), and the first call made 30 s
later, as when an agent reads files and writes cases before its first comparison. Warm: later
calls on the same pool (fresh hidden rows every time). Each example
runs twice: with the candidate worker confined (Landlock and a PID namespace, as the server runs
it), and with confinement switched off (AETHER_MCP_UNCONFINED=1), alternating so a slow spell of
the machine hits both; the table gives the warm slowdown confinement costs (Landlock, the PID and
network namespaces, the watch). Then `--audits` warm audit_candidate calls per mode at the tool's
defaults, interleaved the same way. Prints Markdown tables and the machine it ran on; `--json
PATH` also writes the raw numbers.

    .venv/bin/python benchmarks/compare_latency.py [--warm 5] [--hidden-rows 20000] [--audits 2]
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
    parser.add_argument("--audits", type=int, default=2, help="warm audit_candidate calls per example and mode")
    parser.add_argument("--json", default=None, help="also write the raw numbers here")
    parser.add_argument("--head-start", type=float, default=30.0, help="seconds between the server's start and the first call, for the warm-start column")
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="aether-bench-state-")
    os.environ["AETHER_MCP_STATE_DIR"] = state

    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.processes.confinement import DISABLE_ENV
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.tools import files, workspaces
    from aether_mcp.tools.benchmarking import micro_benchmark
    from aether_mcp.tools.byte_compare import byte_compare
    from aether_mcp.tools.cheat_audit import audit_candidate
    from aether_mcp.workspace import SparkConfig
    from aether_mcp.workspace.derivation import DEFAULT_SPARK_CONF

    results, micro, audits = [], [], []
    for example, udf, arg_types, candidate in EXAMPLES:
        root_dir = Path(tempfile.mkdtemp(prefix="aether-bench-"))
        shutil.copytree(REPO / "examples" / example, root_dir / example)
        root = SandboxRoot(root_dir)
        ws = workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types).workspace
        files.write_file(root, ws, "tests/cases.py", (REPO / "examples" / example / "cases.py").read_text())
        files.write_file(root, ws, f"candidate/{candidate}.py", (REPO / "examples" / example / "candidates" / f"{candidate}.py").read_text())
        pools, cold, warm, first = {}, {}, {"confined": [], "unconfined": []}, None
        started_early = WorkerPool(forbidden=[root_dir])  # confined, as the server runs it
        try:
            started_early.warm_start(SparkConfig(conf=dict(DEFAULT_SPARK_CONF)))
            time.sleep(args.head_start)
            warm_at_call = started_early.ready_roles() == ["candidate", "reference"]
            started = time.monotonic()
            assert byte_compare(root, started_early, ws, candidate, hidden_rows=args.hidden_rows).equal
            after_warm_start = time.monotonic() - started
        finally:
            started_early.close()
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
            audited: dict[str, list[float]] = {"confined": [], "unconfined": []}
            for _ in range(args.audits):
                for mode in ("confined", "unconfined"):
                    started = time.monotonic()
                    verdict = audit_candidate(root, pools[mode], ws, candidate).verdict
                    audited[mode].append(time.monotonic() - started)
                    assert verdict == ("PASS" if mode == "confined" else "PASS (unconfined)"), f"{example}: {verdict}"
            if args.audits:
                a, b = statistics.median(audited["confined"]), statistics.median(audited["unconfined"])
                audits.append({"example": example, "candidate": candidate, "confined_s": [round(v, 2) for v in audited["confined"]], "unconfined_s": [round(v, 2) for v in audited["unconfined"]],
                               "confined_median_s": round(a, 2), "unconfined_median_s": round(b, 2), "slowdown": round(a / b - 1, 3)})
            if first.backend_note.startswith("spark-sql"):
                # micro_benchmark's sql form in the same warm workers, as an agent's optimizing loop calls it
                for _ in range(2):
                    timed = micro_benchmark(root, ws, candidate, repeats=5, workers=pools["confined"])
                    micro.append({"example": example, "candidate": candidate, "rows": timed.rows, "duration_s": timed.duration_s, "floor_median_s": timed.floor_median_s,
                                  "original_median_s": timed.original_median_s, "candidate_median_s": timed.candidate_median_s, "speedup": timed.speedup})
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
                "after_warm_start_s": round(after_warm_start, 2),
                "warm_at_call": warm_at_call,
                "after_warm_start_vs_warm": round(after_warm_start / statistics.median(warm["confined"]), 2),
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
    print(f"| example | candidate | rows compared | cold confined / unconfined (s) | first call {args.head_start:.0f} s after warm start (s) | warm median confined (s) | warm median unconfined (s) | first after warm start / warm | warm slowdown |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['example']} | {r['candidate']} | {r['rows_compared']} | {r['cold_confined_s']} / {r['cold_unconfined_s']} | {r['after_warm_start_s']}{'' if r['warm_at_call'] else ' (still warming)'} | "
            f"{r['warm_confined_median_s']} | {r['warm_unconfined_median_s']} | {r['after_warm_start_vs_warm']:.2f}x | {r['warm_slowdown']:+.0%} |"
        )
    if audits:
        print(f"\naudit_candidate at its defaults in the same warm workers (median of {args.audits} per mode, interleaved):\n")
        print("| example | candidate | confined median (s) | unconfined median (s) | slowdown |")
        print("|---|---|---|---|---|")
        for a in audits:
            print(f"| {a['example']} | {a['candidate']} | {a['confined_median_s']} | {a['unconfined_median_s']} | {a['slowdown']:+.0%} |")
    if micro:
        print(f"\nmicro_benchmark of a sql candidate in the warm workers ({micro[0]['rows']:,} rows, 5 runs of each after one warm-up; the first call also generates the data):\n")
        print("| example | candidate | call | duration (s) | floor median (s) | original median (s) | candidate median (s) | speedup |")
        print("|---|---|---|---|---|---|---|---|")
        for index, m in enumerate(micro):
            print(
                f"| {m['example']} | {m['candidate']} | {'first' if index % 2 == 0 else 'second'} | {m['duration_s']:.1f} | {m['floor_median_s']:.3f} | "
                f"{m['original_median_s']:.3f} | {m['candidate_median_s']:.3f} | {m['speedup']:.2f}x |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results, "audits": audits, "micro_benchmark": micro}, indent=2))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), platform.processor())
    memory_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), 0)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    import pyspark

    return f"{os.cpu_count()} cores ({cpu}), {memory_kb // 1024 // 1024} GiB, Python {platform.python_version()}, {java}, PySpark {pyspark.__version__}"


if __name__ == "__main__":
    main()
