"""How many UDFs draft_candidate drafts, how many drafts the judge proves equal unaided, and how fast they run.

Over the UDF-shapes benchmark's shapes (tests/shapes/) and the bundled examples: init_workspace,
draft_candidate, then for each draft byte_compare, audit_candidate and run_benchmark (original vs
draft vs the no-UDF floor), on one warm worker pool. Nothing is edited by hand: these are the
drafts as written. Prints a row per UDF (drafted or the construct refused, equal, verdict, speedup)
and the rates, and the machine.

    .venv/bin/python benchmarks/draft_rate.py [--hidden-rows 2000] [--rows 200000] [--no-benchmark] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
from compare_latency import machine  # noqa: E402
from shapes.catalog import SHAPES  # noqa: E402

# Benchmark data for UDFs whose original raises on generic generated strings (the drafts are judged as written either way).
STAMPS = [f"20{y:02}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC" for y, m, d, h, mi, s in zip(range(10, 25), range(1, 13), range(1, 29), range(24), range(0, 60, 7), range(0, 60, 11), strict=False)]
SPECS = {"date_parsing": {"created_at": {"values": STAMPS, "null_rate": 0.01}}}

EXAMPLES = [
    ("loyalty_pricing", "loyalty_discount", None),
    ("contact_cleanup", "normalize_email", {"raw": "string"}),
    ("delivery_geo", "haversine_km", {name: "double" for name in ("lat1", "lon1", "lat2", "lon2")}),
]


def subjects() -> list[tuple[str, Path, str, str, dict | None]]:
    """(name, folder to copy, job file in it, udf, arg_types) for every shape with its own job and every example."""
    found = [(s.name, s.path, s.source, s.udf, s.arg_types) for s in SHAPES if not s.folder and s.refused is None]
    found += [(name, REPO / "examples" / name, "job.py", udf, types) for name, udf, types in EXAMPLES]
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden-rows", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=200_000, help="rows of generated data for run_benchmark")
    parser.add_argument("--no-benchmark", action="store_true", help="draft and judge only")
    parser.add_argument("--only", nargs="+", help="these UDFs (shape or example names) only")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    os.environ["AETHER_MCP_STATE_DIR"] = tempfile.mkdtemp(prefix="aether-bench-state-")
    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.tools import workspaces
    from aether_mcp.tools.benchmarking import run_benchmark
    from aether_mcp.tools.byte_compare import byte_compare
    from aether_mcp.tools.cheat_audit import audit_candidate
    from aether_mcp.tools.drafting import draft_candidate

    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aether-draft-rate-") as folder:
        root_path = Path(folder)
        pool = WorkerPool(forbidden=[root_path])
        try:
            for name, source_folder, job, udf, arg_types in subjects():
                if options.only and name not in options.only:
                    continue
                shutil.copytree(source_folder, root_path / name, ignore=shutil.ignore_patterns("candidate*", "__pycache__"))
                root = SandboxRoot(root_path)
                row: dict = {"udf": name}
                rows.append(row)
                try:
                    ws = workspaces.init_workspace(root, f"{name}/{job}", udf, arg_types=arg_types, backend="cpu", workspace=f"ws/{name}").workspace
                except ToolError as exc:
                    row["init"] = f"refused: {str(exc)[:80]}"
                    continue
                made = draft_candidate(root, ws)
                if not made.drafted:
                    row["draft"] = f"refused: {made.refused.outside_subset[:70]} (line {made.refused.line})"
                    continue
                row["draft"] = "drafted"
                proof = byte_compare(root, pool, ws, "draft", hidden_rows=options.hidden_rows)
                row["equal"] = proof.equal
                row["rows_compared"] = proof.rows_compared
                if proof.equal is not True:
                    row["mismatch"] = [(m.args, m.expected, m.actual) for m in proof.mismatches[:1]]
                    continue
                audit = audit_candidate(root, pool, ws, "draft", hidden_rows_count=max(options.hidden_rows, 1000))
                row["verdict"] = audit.verdict
                if options.no_benchmark or not audit.verdict.startswith("PASS"):
                    continue
                try:
                    bench = run_benchmark(root, pool, ws, "draft", rows=options.rows, repeats=3, warmup=1, modes=["floor", "original", "candidate"], spec=SPECS.get(name))
                except ToolError as exc:  # e.g. generated data the original raises on: the row says so and the run goes on
                    row["not_timed"] = str(exc)[:200]
                    continue
                row["speedup"] = bench.speedup
                row["speedup_ci"] = bench.speedup_ci
                print(json.dumps(row), flush=True)
        finally:
            pool.close()
    took = time.monotonic() - started
    taken = [r for r in rows if "init" not in r]
    drafted = [r for r in taken if r.get("draft") == "drafted"]
    equal = [r for r in drafted if r.get("equal") is True]
    passed = [r for r in equal if str(r.get("verdict", "")).startswith("PASS")]
    print()
    for r in rows:
        speed = f"{r['speedup']:.2f}x ({r['speedup_ci'][0]:.2f}-{r['speedup_ci'][1]:.2f})" if r.get("speedup") and r.get("speedup_ci") else ""
        print(f"{r['udf']:24} {r.get('init') or r.get('draft', ''):78.78} {str(r.get('equal', '')):5} {r.get('verdict', ''):18} {speed}")
    print()
    print(f"UDFs init_workspace takes: {len(taken)} of {len(rows)}")
    print(f"drafted: {len(drafted)} of {len(taken)} ({len(drafted) / max(len(taken), 1):.0%})")
    print(f"equal unaided: {len(equal)} of {len(drafted)} drafts ({len(equal) / max(len(drafted), 1):.0%}); audit PASS: {len(passed)}")
    print(f"took {took:.0f}s on {machine()}")
    if options.json:
        options.json.write_text(json.dumps({"rows": rows, "machine": machine(), "seconds": took}, indent=2))


if __name__ == "__main__":
    main()
