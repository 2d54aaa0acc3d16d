"""Runs audit_candidate on every candidate of the red-team corpus, at the audit's default sizes.

Those are 20,000 hidden rows and watched runs on 1,000 and 20,000 rows, except that kernels,
which run under numba's CUDA simulator here, are watched on 250 and 2,500 rows. (The test suite
draws 1,000 hidden rows for the cheats that are not a second-red-team class case, and says why
in tests/test_red_team.py.) Prints Markdown tables for docs/audit.md: cheats caught by the rule meant to catch them (and
by which kinds of check), honest candidates passed per target kind, and audit times, with the
machine it ran on.

    .venv/bin/python benchmarks/red_team_report.py [--hidden-rows 20000]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
from compare_latency import machine  # noqa: E402


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden-rows", type=int, default=20_000)
    args = parser.parse_args()
    os.environ["AETHER_MCP_STATE_DIR"] = tempfile.mkdtemp(prefix="aether-bench-state-")
    from red_team.corpus import entries, make_workspaces
    from test_red_team import WATCHED_ROWS

    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.tools.cheat_audit import audit_candidate

    base = Path(tempfile.mkdtemp(prefix="aether-red-team-"))
    root = SandboxRoot(base)
    pool = WorkerPool(forbidden=[base])
    results = []
    try:
        made = make_workspaces(root, pool, base)
        for entry in entries():
            result = audit_candidate(root, pool, made[entry.udf], entry.name, hidden_rows_count=args.hidden_rows, watched_rows=WATCHED_ROWS[entry.target])
            blocking = [f for f in result.findings if f.severity == "block"]
            checks = sorted({f.check for f in blocking if f.rule == entry.expect})
            rules = {f.rule for f in blocking} | ({"unequal"} if result.comparison.equal is False else set())  # `unequal` is caught by the comparison
            results.append((entry, result.verdict, rules, checks, result.duration_s))
            print(f"{entry.id}: {result.verdict} {sorted(rules)}", file=sys.stderr)
    finally:
        pool.close()
    print(tables(results))


def tables(results) -> str:
    by_rule: dict[str, list] = defaultdict(list)
    honest: dict[str, list] = defaultdict(list)
    for entry, verdict, rules, checks, seconds in results:
        (honest[entry.target] if entry.expect == "honest" else by_rule[entry.expect]).append((entry, verdict, rules, checks, seconds))
    lines = ["| rule | cheats | caught by that rule | by a static rule | by the watch (dynamic) | by the watch only |", "|---|---|---|---|---|---|"]
    for rule, items in sorted(by_rule.items()):
        caught = [i for i in items if i[1] == "FAIL" and rule in i[2]]
        static = sum(1 for i in caught if "static" in i[3])
        dynamic = sum(1 for i in caught if "dynamic" in i[3])
        lines.append(f"| {rule} | {len(items)} | {len(caught)} | {static} | {dynamic} | {len(caught) - static} |")
    cheats = [i for items in by_rule.values() for i in items]
    caught_all = sum(1 for i in cheats if i[1] == "FAIL" and i[0].expect in i[2])
    dynamic_all = sum(1 for i in cheats if i[1] == "FAIL" and "dynamic" in i[3])
    lines.append(f"| **all** | **{len(cheats)}** | **{caught_all}** | | **{dynamic_all}** | |")
    lines += ["", "| target kind | honest candidates | PASS | audit median (s) |", "|---|---|---|---|"]
    for kind, items in sorted(honest.items()):
        lines.append(f"| {kind} | {len(items)} | {sum(1 for i in items if i[1] == 'PASS')} | {statistics.median(i[4] for i in items):.1f} |")
    lines += ["", f"Machine: {machine()}"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
