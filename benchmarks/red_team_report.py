"""Runs audit_candidate, at the tool's default sizes, on every candidate of the red-team corpus.

Prints Markdown tables for the README: cheats caught by the rule meant to catch them (and by
which kind of check), honest candidates passed per target kind, and audit times, with the
machine it ran on.

    .venv/bin/python benchmarks/red_team_report.py
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
    os.environ["AETHER_MCP_STATE_DIR"] = tempfile.mkdtemp(prefix="aether-bench-state-")
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.tools.cheat_audit import audit_candidate
    from red_team.corpus import entries, make_workspaces

    base = Path(tempfile.mkdtemp(prefix="aether-red-team-"))
    root = SandboxRoot(base)
    pool = WorkerPool()
    results = []
    try:
        made = make_workspaces(root, pool, base)
        for entry in entries():
            result = audit_candidate(root, pool, made[entry.udf], entry.name)
            blocking = [f for f in result.findings if f.severity == "block"]
            checks = sorted({f.check for f in blocking if f.rule == entry.expect})
            results.append((entry, result.verdict, {f.rule for f in blocking}, checks, result.duration_s))
            print(f"{entry.id}: {result.verdict} {sorted({f.rule for f in blocking})}", file=sys.stderr)
    finally:
        pool.close()
    print(tables(results))


def tables(results) -> str:
    by_rule: dict[str, list] = defaultdict(list)
    honest: dict[str, list] = defaultdict(list)
    for entry, verdict, rules, checks, seconds in results:
        (honest[entry.target] if entry.expect == "honest" else by_rule[entry.expect]).append((entry, verdict, rules, checks, seconds))
    lines = ["| rule | cheats | caught by that rule | caught by a static rule | caught only by a watched run |", "|---|---|---|---|---|"]
    for rule, items in sorted(by_rule.items()):
        caught = [i for i in items if i[1] == "FAIL" and rule in i[2]]
        static = sum(1 for i in caught if "static" in i[3])
        lines.append(f"| {rule} | {len(items)} | {len(caught)} | {static} | {len(caught) - static} |")
    cheats = [i for items in by_rule.values() for i in items]
    caught_all = sum(1 for i in cheats if i[1] == "FAIL" and i[0].expect in i[2])
    lines.append(f"| **all** | **{len(cheats)}** | **{caught_all}** | | |")
    lines += ["", "| target kind | honest candidates | PASS | audit median (s) |", "|---|---|---|---|"]
    for kind, items in sorted(honest.items()):
        lines.append(f"| {kind} | {len(items)} | {sum(1 for i in items if i[1] == 'PASS')} | {statistics.median(i[4] for i in items):.1f} |")
    lines += ["", f"Machine: {machine()}"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
