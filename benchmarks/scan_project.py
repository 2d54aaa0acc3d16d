"""How long scan_project takes over a project of 50 job files, cold and warm.

The project is built from the fixture project `tests/projects/retail` (21 UDFs in 11 files): its
files are copied into `--copies` sub-projects (5 copies of 10 job files make 50 files, 105 UDFs).
"cold" runs with an empty state folder, so it includes the one-time measurement of Spark's per-row
UDF cost; "warm" scans again after a file changed, with that measurement kept. Prints the times,
the UDFs found and the share of the time spent timing functions.

    .venv/bin/python benchmarks/scan_project.py --copies 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "projects" / "retail"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5)
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aether-scan-bench-"))
    os.environ["AETHER_MCP_STATE_DIR"] = str(base / "state")
    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.tools import project_scan

    project = base / "root" / "project"
    for copy in range(options.copies):
        shutil.copytree(FIXTURE, project / f"team_{copy}", ignore=shutil.ignore_patterns("__pycache__"))
    files = [p for p in project.rglob("*.py") if p.name != "__init__.py"]
    root = SandboxRoot(base / "root")
    try:
        started = time.monotonic()
        cold = project_scan.scan_project(root, "project")
        cold_s = time.monotonic() - started
        (project / "team_0" / "udfs.py").write_text((project / "team_0" / "udfs.py").read_text() + "\n", encoding="utf-8")
        started = time.monotonic()
        warm = project_scan.scan_project(root, "project")
        warm_s = time.monotonic() - started
    finally:
        shutil.rmtree(base, ignore_errors=True)
    timed = sum(u.payoff.python_us_per_row is not None for u in warm.udfs)
    print(f"job files: {len(files)}; UDFs found: {cold.udfs_found} ({cold.convertible} convertible as they are)")
    print(f"cold (includes Spark's per-row UDF cost, {cold.spark_udf_us_per_row} us/row): {cold_s:.1f} s")
    print(f"warm (that cost kept): {warm_s:.1f} s; functions timed on the first page: {timed} of {len(warm.udfs)}")
    print(f"budget per timed function: {project_scan.COST_BUDGET_S} s on {project_scan.COST_ROWS} generated rows per pass")


if __name__ == "__main__":
    main()
