"""How long mutation_score (and coverage_report) take on the bundled examples with their cases.

Cold: the first call after the server starts (the reference worker's Spark starts to capture the
inputs). Warm: a later call. Prints a Markdown table and the machine it ran on.

    .venv/bin/python benchmarks/mutation_speed.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from compare_latency import EXAMPLES, machine  # noqa: E402


def main() -> None:
    os.environ["AETHER_MCP_STATE_DIR"] = tempfile.mkdtemp(prefix="aether-bench-state-")
    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.tools import files, spec_strength, workspaces

    rows = []
    for example, udf, arg_types, _candidate in EXAMPLES:
        root_dir = Path(tempfile.mkdtemp(prefix="aether-bench-"))
        shutil.copytree(REPO / "examples" / example, root_dir / example)
        root = SandboxRoot(root_dir)
        ws = workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types).workspace
        files.write_file(root, ws, "tests/cases.py", (REPO / "examples" / example / "cases.py").read_text())
        pool = WorkerPool()
        try:
            started = time.monotonic()
            cold = spec_strength.mutation_score(root, pool, ws)
            cold_s = time.monotonic() - started
            started = time.monotonic()
            warm = spec_strength.mutation_score(root, pool, ws)
            warm_s = time.monotonic() - started
            started = time.monotonic()
            coverage = spec_strength.coverage_report(root, pool, ws)
            coverage_s = time.monotonic() - started
        finally:
            pool.close()
            shutil.rmtree(root_dir, ignore_errors=True)
        rows.append((example, cold.total, len(warm.survivors), f"{warm.score:.2f}", f"{cold_s:.1f}", f"{warm_s:.1f}", f"{coverage.branch_percent:.0f}%", f"{coverage_s:.1f}"))
        print(f"{example}: mutation cold {cold_s:.1f}s warm {warm_s:.1f}s", file=sys.stderr, flush=True)
    print(f"Machine: {machine()}\n")
    print("| example | mutants | survivors | score | mutation_score cold (s) | warm (s) | branch coverage | coverage_report warm (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
