"""`aether-mcp serve` (MCP over stdio), `aether-mcp demo` (the loop on a bundled example) and `aether-mcp verify`."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from aether_mcp import __version__
from aether_mcp.path_guard import ROOT_ENV, root_problem

DEMO_EXAMPLE = "loyalty_pricing"
DEMO_ROWS = 200_000  # enough rows for the UDF overhead to show, few enough to keep the demo short


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="aether-mcp", description="Convert PySpark Python UDFs into fast, verified equivalents.")
    parser.add_argument("--version", action="version", version=f"aether-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve MCP over stdio")
    serve.add_argument("--root", default=None, help=f"the only directory the tools may touch (required, or set {ROOT_ENV}); never / or your home folder itself")
    demo = commands.add_parser("demo", help="run the conversion loop on a bundled example and print a summary")
    demo.add_argument("--examples", default=None, help="folder holding the examples (default: the source checkout's examples/)")
    demo.add_argument("--keep", default=None, help="put the demo's files in this new folder (default: a new temporary folder, left in place for the report)")
    verify = commands.add_parser("verify", help="before shipping: recompute every check from the job source, trusting no record")
    verify.add_argument("--root", required=True, help="the server root that holds the job and the workspace")
    verify.add_argument("workspace", help="the workspace folder (relative to the root, or absolute inside it)")
    verify.add_argument("--candidate", default=None, help="the candidate to verify (default: the one the report recommends)")
    verify.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.command == "serve":
        sys.exit(_serve(args.root))
    if args.command == "verify":
        from aether_mcp.verification import main as verify_main

        sys.exit(verify_main(args.root, args.workspace, args.candidate, args.json))
    sys.exit(_demo(args.examples, args.keep))


def _serve(root: str | None) -> int:
    root = root or os.environ.get(ROOT_ENV) or None
    problem = root_problem(root)
    if problem:
        print(f"aether-mcp: {problem}", file=sys.stderr)
        return 2
    path = Path(root).expanduser()
    from aether_mcp.server import build_server

    build_server(str(path)).run("stdio")
    return 0


def _demo(examples: str | None, keep: str | None) -> int:
    from aether_mcp.processes.java_runtime import JavaUnavailable, check_java

    try:
        check_java()
    except JavaUnavailable as exc:
        print(f"aether-mcp demo: {exc}", file=sys.stderr)
        return 2
    source = Path(examples) if examples else _bundled_examples()
    example = source / DEMO_EXAMPLE
    if not (example / "job.py").is_file():
        print(f"aether-mcp demo: no examples at {source}; reinstall aether-mcp, or pass --examples DIR (a source checkout's examples/).", file=sys.stderr)
        return 2
    if keep:
        root = Path(keep)
        if root.exists() and any(root.iterdir()):
            print(f"aether-mcp demo: --keep {keep} exists and is not empty; give a new folder.", file=sys.stderr)
            return 2
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="aether-demo-"))
    try:
        shutil.copytree(example, root / "jobs" / DEMO_EXAMPLE)
        import anyio

        return anyio.run(_demo_loop, root)
    except DemoFailed as exc:
        print(f"aether-mcp demo: {exc}", file=sys.stderr)
        return 1
    finally:
        # kept, so the report and its charts can be read; a temporary folder says so
        if not keep:
            print(f"The demo's files (workspace, report, charts, benchmark data) are in {root}; delete the folder when done.", flush=True)


def _bundled_examples() -> Path:
    """The source checkout's examples/, else the copy an installed wheel put under <prefix>/share/aether-mcp/."""
    checkout = Path(__file__).resolve().parents[1] / "examples"
    if (checkout / DEMO_EXAMPLE / "job.py").is_file():
        return checkout
    return Path(sys.prefix) / "share" / "aether-mcp" / "examples"


async def _demo_loop(root: Path) -> int:
    from mcp import Client

    from aether_mcp.server import build_server

    job = f"jobs/{DEMO_EXAMPLE}"
    started = time.monotonic()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    async with Client(build_server(str(root))) as client:

        async def call(tool: str, **arguments):
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise DemoFailed(f"{tool} failed: {result.content[0].text if result.content else ''}")
            return result.structured_content or {}

        say(f"aether-mcp demo: converting a UDF from {job}/job.py (server root {root})")
        created = await call("init_workspace", source=f"{job}/job.py", udf="loyalty_discount")
        ws = created["workspace"]
        udf = created["udf"]
        signature = ", ".join(f"{a['name']} {a['type']}" for a in udf["args"])
        say(f"1. init_workspace  -> {udf['name']}({signature}) -> {udf['return_type']}, extracted to original/udf.py")

        cases = (root / job / "cases.py").read_text(encoding="utf-8")
        await call("write_file", workspace=ws, path="tests/cases.py", content=cases)
        count = cases.count('"args"')
        say(f"2. write_file      -> tests/cases.py with {count} behaviour cases")

        run = await call("run_tests", workspace=ws, target="original")
        say(f"3. run_tests       -> original: {_counts(run)} in {run['duration_s']:.1f}s through Spark")
        if run["failed"] or run["errors"]:
            raise DemoFailed("the bundled cases do not pass on the original UDF")

        coverage = await call("coverage_report", workspace=ws)
        mutation = await call("mutation_score", workspace=ws)
        say(
            f"4. coverage_report -> {coverage['line_percent']:.0f}% of lines, {coverage['branch_percent']:.0f}% of branches; "
            f"mutation_score -> {mutation['killed']} of {mutation['total']} mutants killed ({mutation['score']:.2f})"
        )
        frozen = await call("freeze_tests", workspace=ws)
        say(f"5. freeze_tests    -> {frozen['cases']} cases frozen: candidates are judged against exactly these")

        snap = await call("snapshot", workspace=ws, label="tests pin the original")
        say(f"6. snapshot        -> snapshot {snap['snapshot_id']} ({len(snap['files'])} files)")

        naive = (root / job / "candidates" / "naive_sql.py").read_text(encoding="utf-8")
        await call("write_file", workspace=ws, path="candidate/naive.py", content=naive)
        run = await call("run_tests", workspace=ws, target="candidate:naive")
        failing = [_assertion(t["message"]) for t in run["tests"] if t["outcome"] in ("failed", "error")]
        say(f"7. run_tests       -> candidate:naive (a plausible one-line rewrite): {_counts(run)}")
        for message in failing[:3]:
            say(f"     caught: {message[:160]}")

        reverted = await call("revert", workspace=ws, snapshot_id=snap["snapshot_id"])
        say(f"8. revert          -> back to snapshot {reverted['reverted_to']} (removed {', '.join(reverted['deleted'])}; kept as snapshot {reverted['backup_snapshot_id']})")

        drafted = await call("draft_candidate", workspace=ws)
        if drafted["drafted"]:
            judged = await call("byte_compare", workspace=ws, candidate=drafted["candidate"])
            say(
                f"9. draft_candidate -> {drafted['path']} translated from the original ({drafted['branches']} branches, recipes {', '.join(drafted['recipes'])}); "
                f"byte_compare -> draft: equal={judged['equal']} on {judged['rows_compared']} rows"
            )
        else:
            judged = {"equal": None}
            say(f"9. draft_candidate -> refused: {drafted['refused']['outside_subset']} (original/udf.py line {drafted['refused']['line']}); written by hand instead")

        good = (root / job / "candidates" / "discount_sql.py").read_text(encoding="utf-8")
        await call("write_file", workspace=ws, path="candidate/discount_sql.py", content=good)
        run = await call("run_tests", workspace=ws, target="candidate:discount_sql")
        say(f"10. run_tests       -> candidate:discount_sql (careful rewrite): {_counts(run)}")

        proof = await call("byte_compare", workspace=ws, candidate="discount_sql")
        sources = ", ".join(f"{s['rows']} {s['source']}" for s in proof["sources"])
        say(f"11. byte_compare   -> discount_sql: equal={proof['equal']} on {proof['rows_compared']} rows ({sources}) in {proof['duration_s']:.1f}s")
        await call("write_file", workspace=ws, path="candidate/naive.py", content=naive)
        caught = await call("byte_compare", workspace=ws, candidate="naive")
        hidden = next(s for s in caught["sources"] if s["source"] == "hidden")
        say(f"12. byte_compare   -> naive: equal={caught['equal']}, {hidden['mismatched']} of {hidden['rows']} hidden rows differ, e.g.")
        for mismatch in [m for m in caught["mismatches"] if m["source"] == "hidden"][:2]:
            say(f"     ({', '.join(mismatch['args'])}): expected {mismatch['expected']}, got {mismatch['actual']} [{mismatch['kind']}]")

        clean = await call("audit_candidate", workspace=ws, candidate="discount_sql")
        say(f"13. audit_candidate -> discount_sql: {clean['verdict']} ({len(clean['findings'])} findings; fresh comparison equal={clean['comparison']['equal']})")
        shortcut = (root / job / "candidates" / "shortcut_udf.py").read_text(encoding="utf-8")
        await call("write_file", workspace=ws, path="candidate/shortcut.py", content=shortcut)
        cheat = await call("audit_candidate", workspace=ws, candidate="shortcut")
        say(f"14. audit_candidate -> shortcut (the UDF's logic, row by row): {cheat['verdict']}, fresh comparison equal={cheat['comparison']['equal']}")
        for reason in cheat["reasons"][:2]:
            say(f"     {reason[:160]}")

        bench = await call("run_benchmark", workspace=ws, candidate="discount_sql", rows=DEMO_ROWS, repeats=3, warmup=1, modes=["floor", "original", "candidate"])
        medians = {m["mode"]: m["median_s"] for m in bench["modes"]}
        interval = bench["speedup_ci"] or [0.0, 0.0]
        say(
            f"15. run_benchmark  -> {DEMO_ROWS:,} rows, {bench['repeats']} rounds (ended by {bench['rounds_ended_by'].split(':')[0]}): original {medians.get('original', 0):.2f}s, discount_sql {medians.get('candidate', 0):.2f}s, "
            f"no-UDF floor {medians.get('floor', 0):.2f}s: {bench['speedup']:.2f}x (95% CI {interval[0]:.2f}-{interval[1]:.2f}), "
            f"{(bench['overhead_eliminated'] or 0):.0%} of the UDF overhead removed"
        )

        profile = await call("nsys_profile", workspace=ws, candidate="discount_sql")
        codegen = profile["codegen"] or {}
        repeated = profile["hotspots"]
        example = f", e.g. {repeated[0]['function'][:60]} x{repeated[0]['calls']}" if repeated else ""
        say(
            f"16. nsys_profile   -> backend {profile['backend']} (no GPU profiler sees the JVM): {codegen.get('in_codegen')} of {codegen.get('operators')} operators "
            f"in whole-stage codegen, {len(repeated)} subexpression(s) appearing more than once in the plan (counted, not timed){example}"
        )

        best = await call("try_optimization", workspace=ws, candidate="discount_sql", label="reference candidate", rows=DEMO_ROWS, repeats=3)
        say(f"17. try_optimization -> step {best['step']}: {best['reason']}")
        await call("write_file", workspace=ws, path="candidate/discount_sql.py", content=naive)
        step = await call("try_optimization", workspace=ws, candidate="discount_sql", label="one expression instead of steps", rows=DEMO_ROWS, repeats=3)
        restored = (Path(ws) / "candidate" / "discount_sql.py").read_text(encoding="utf-8") == good
        say(
            f"18. try_optimization -> step {step['step']} ('{step['label']}'): accepted={step['accepted']}, reverted={step['reverted']}; "
            f"{step['reason'][:120]}; candidate/discount_sql.py restored byte for byte: {restored}"
        )

        written = await call("report", workspace=ws)
        say(f"19. report         -> ship {written['recommended']}, {bench['speedup']:.2f}x in run_benchmark; {len(written['sections'])} sections: the code that replaces the UDF in the job, then the command to verify it before shipping")
        say(f"    report written to {written['artifacts']['markdown']}")

        expected = {  # in step order: the first unmet one is the first to read about above
            "7. the tests catch the naive rewrite": bool(failing),
            "9. byte_compare proves the draft equal": judged["equal"] is True,
            "10. the careful rewrite passes the tests": not (run["failed"] or run["errors"]),
            "11. byte_compare proves the careful rewrite equal": proof["equal"] is True,
            "12. byte_compare finds the naive rewrite unequal": caught["equal"] is False,
            "13. audit_candidate passes the careful rewrite": clean["verdict"] == "PASS",
            "14. audit_candidate fails the shortcut": cheat["verdict"] == "FAIL",
            "15. run_benchmark gives a speedup": bench["speedup"] is not None,
            "16. nsys_profile reads the Spark plan": profile["backend"] == "spark-plan",
            "17. try_optimization records the starting point": best["accepted"] is True,
            "18. try_optimization rejects and reverts the broken step": not step["accepted"] and step["reverted"] and restored,
            "19. the report recommends the careful rewrite": written["recommended"] == "discount_sql",
        }
    # after the server and its workers have stopped, as a person runs it before shipping
    verified = _verify(root, ws)
    say(f"20. aether-mcp verify --root {root} {Path(ws).relative_to(root)} -> {'passed' if verified.passed else 'FAILED'}: " + ", ".join(f"{c.name} {c.status}" for c in verified.checks))
    for check in verified.checks:
        if check.status not in ("pass", "warn"):
            say(f"     {check.name}: {check.detail[:200]}")
    expected["20. aether-mcp verify passes"] = verified.passed
    unmet = [what for what, held in expected.items() if not held]
    if unmet:
        say(f"Done in {time.monotonic() - started:.0f}s, and {len(unmet)} of the demo's {len(expected)} expectations did not hold: " + "; ".join(unmet))
        for what in unmet:
            print(f"aether-mcp demo: expected, and not so: {what} (see step {what.split('.')[0]} above)", file=sys.stderr)
        return 1
    say(
        f"Done in {time.monotonic() - started:.0f}s, all four phases: the tests pin the original and caught the naive rewrite; draft_candidate translated the UDF "
        "and byte_compare proved the draft equal; byte_compare proved the careful one "
        "equal and found the naive one's counterexamples unaided; audit_candidate passed the careful one and failed the shortcut; run_benchmark timed it "
        "in Spark; try_optimization kept the verified version and reverted a change that broke equality; the report says what to ship and how; "
        "aether-mcp verify recomputed all of it from the job source before shipping."
    )
    return 0


def _verify(root: Path, workspace: str):
    """`aether-mcp verify` on the demo's workspace, in this process, with a worker pool of its own."""
    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.verification import verify

    workers = WorkerPool(forbidden=[root])
    try:
        return verify(SandboxRoot(root), workers, workspace)
    finally:
        workers.close()


class DemoFailed(RuntimeError):
    pass


def _assertion(message: str) -> str:
    """The assertion line of a pytest failure, without pytest's prefix."""
    for line in message.splitlines():
        if line.startswith("E   AssertionError: "):
            return line.removeprefix("E   AssertionError: ")
    return message.strip().splitlines()[-1] if message.strip() else ""


def _counts(run: dict) -> str:
    parts = [f"{run['passed']} passed"]
    if run["failed"]:
        parts.append(f"{run['failed']} failed")
    if run["errors"]:
        parts.append(f"{run['errors']} errors")
    return ", ".join(parts)
