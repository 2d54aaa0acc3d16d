"""report: the conversion report of a workspace, as Markdown and JSON, built from what the tools recorded.

Sections: the UDF and its source; the tests (cases, coverage, mutation score, justifications,
freezes and unfreezes); every candidate with its latest comparison and audit; recorded
deviations; benchmarks with their charts; profiles; the optimization journal; and the
recommendation: which candidate to ship and the exact code that replaces the UDF in the job.
Nothing is run: a result that no longer matches the files (a candidate edited after its audit)
is shown as stale, never as current.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.evaluation.spark_session import compiler_note
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import spec_strength
from aether_mcp.tools.benchmarking import BENCH_DIR
from aether_mcp.tools.data_validation import VALIDATE_DIR
from aether_mcp.tools.job_conversion import with_column_rewrite
from aether_mcp.tools.optimization import best_versions, journal_entries
from aether_mcp.tools.profiling import PROFILES_DIR
from aether_mcp.tools.workspaces import WorkspaceStatusResult, open_named, workspace_status
from aether_mcp.workspace import CANDIDATE_DIR, Workspace, candidate_results, deviations
from aether_mcp.workspace.candidates import BadCandidate, declared_target

REPORT_DIR = "report"
EMBED_LIMIT = 40_000  # bytes as sent (both copies of a result); larger reports come back as paths only


class ReportResult(BaseModel):
    workspace: str
    recommended: str | None = Field(description="the candidate to ship, or None when none is verified yet")
    recommendation: str
    artifacts: dict[str, str] = Field(description="markdown: report.md, json: report.json (charts are linked from the Markdown)")
    embedded_markdown: str | None = Field(description="the Markdown itself, when it costs at most 40,000 bytes as sent (about 20,000 characters); else read artifacts.markdown")
    sections: list[str]


def report(root: SandboxRoot, workspace: str) -> ReportResult:
    opened = Workspace.open_intact(root, workspace)
    data = collect(root, opened)
    markdown = render_markdown(data)
    folder = opened.state_dir / REPORT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(markdown, encoding="utf-8")
    (folder / "report.json").write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return ReportResult(
        workspace=str(opened.path),
        recommended=data["recommendation"]["candidate"],
        recommendation=data["recommendation"]["summary"],
        artifacts={"markdown": str(folder / "report.md"), "json": str(folder / "report.json")},
        embedded_markdown=markdown if paging.wire_bytes(markdown) <= EMBED_LIMIT else None,
        sections=[line.removeprefix("## ") for line in markdown.splitlines() if line.startswith("## ")],
    )


def report_markdown(root: SandboxRoot, name: str) -> str:
    """The report of workspace `name` (aether_workspaces/<name>, else <name> under the root) as Markdown; writes nothing.

    A report longer than a page (paging.PAGE_BYTES as sent) ends after its first page with a line that says where the whole is."""
    markdown = render_markdown(collect(root, open_named(root, name)))
    page, next_offset = paging.cut(markdown, 0, mirrored=False)
    if next_offset is None:
        return markdown
    return f"{page}\n[{len(markdown) - next_offset:,} more characters: call report(workspace), which writes the whole to .aether/{REPORT_DIR}/report.md, and read that]\n"


def collect(root: SandboxRoot, opened: Workspace) -> dict[str, Any]:
    """Everything the report shows, as plain data (the JSON report)."""
    status = workspace_status(root, str(opened.path))
    candidates = _candidates(opened, status)
    benchmarks = _benchmarks(opened)
    data = {
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "workspace": str(opened.path),
        "root": str(root.path),
        "workspace_relative": root.relative(opened.path),
        "udf": {**opened.config.udf.model_dump(), "original_source": opened.verified_original()},
        "call_sites": _call_sites(root, opened),
        "tests": _tests(opened, status),
        "candidates": candidates,
        "deviations": {name: c["deviations"] for name, c in candidates.items() if c["deviations"]},
        "benchmarks": benchmarks,
        "validations": _validations(opened, candidates),
        "arrow_batch": _arrow_batch_runs(opened),
        "profiles": _profiles(opened),
        "journal": journal_entries(opened),
        "optimization": best_versions(opened),
        "gates": [g.model_dump() for g in status.gates],
    }
    data["recommendation"] = _recommendation(opened, data)
    return data


# --- collecting ----------------------------------------------------------------------------------


def _tests(opened: Workspace, status: WorkspaceStatusResult) -> dict[str, Any]:
    coverage = spec_strength.current_result(opened, "coverage")
    mutation = spec_strength.current_result(opened, "mutation")
    original = status.last_runs.get("original")
    return {
        "cases": status.cases,
        "test_files": status.test_files,
        "original_run": original.model_dump() if original else None,
        "coverage": {key: coverage[key] for key in ("line_percent", "branch_percent", "statements", "branches", "gate") if key in coverage} | {"uncovered": len(coverage.get("uncovered", []))} if coverage else None,
        "mutation": {key: mutation[key] for key in ("total", "killed", "invalid", "score", "gate") if key in mutation} | {"survivors": len(mutation.get("survivors", []))} if mutation else None,
        "justifications": status.justifications,
        "frozen": status.freeze.frozen,
        "frozen_since": status.freeze.since,
        "unfreezes": [entry for entry in status.freeze.log if entry.get("event") == "unfreeze"],
        "freeze_log": status.freeze.log,
    }


def _candidates(opened: Workspace, status: WorkspaceStatusResult) -> dict[str, dict[str, Any]]:
    found = {}
    for name in status.candidates:
        path = opened.path / CANDIDATE_DIR / f"{name}.py"
        source = path.read_text(encoding="utf-8", errors="replace")
        try:
            kind = declared_target(source, name)
        except BadCandidate as exc:
            kind = f"invalid ({exc})"
        compare = status.last_compares.get(name)
        audit = status.last_audits.get(name)
        run = status.last_runs.get(f"candidate:{name}")
        try:
            recorded = [d.describe() for d in deviations.load(opened, name)]
        except Exception as exc:  # an unreadable deviation file is shown, not hidden
            recorded = [f"unreadable: {exc}"]
        found[name] = {
            "target": kind,
            "digest": hashlib.sha256(source.encode()).hexdigest(),
            "tests": run.model_dump() if run else None,
            "byte_compare": compare.model_dump() if compare else None,
            "audit": audit.model_dump() if audit else None,
            "deviations": recorded,
            "verified": bool(compare and compare.equal and not compare.candidate_changed_since and audit and audit.verdict.startswith("PASS") and not audit.candidate_changed_since),
        }
    return found


def _benchmarks(opened: Workspace) -> list[dict[str, Any]]:
    runs = []
    for path, data in _recorded(opened.state_dir / BENCH_DIR, "benchmark.json"):
        runs.append(
            {
                "run": path.parent.name,
                "candidate": data.get("candidate"),
                "candidate_digest": data.get("candidate_digest"),
                "rows": data.get("rows"),
                "repeats": data.get("repeats"),
                "modes": {m["mode"]: {"median_s": m["median_s"], "min_s": m["min_s"], "max_s": m["max_s"], "cv": m["cv"]} for m in data.get("modes", [])},
                "failed": data.get("failed", []),
                "speedup": data.get("speedup"),
                "speedup_ci": data.get("speedup_ci"),
                "overhead_eliminated": data.get("overhead_eliminated"),
                "backend": data.get("backend", "cpu"),
                "gpu_verified": bool(data.get("gpu_verified")),
                "master": (data.get("environment") or {}).get("master"),
                "cores": (data.get("environment") or {}).get("cpu_count"),
                "spark_version": (data.get("environment") or {}).get("spark_version"),
                "jvm_compiler": (data.get("environment") or {}).get("jvm_compiler"),
                "chart": (data.get("artifacts") or {}).get("chart"),
                "json": str(path),
            }
        )
    return runs


def _validations(opened: Workspace, candidates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each validate_on_data run, oldest first; `current` when it judged the candidate, original and deviations as they are now."""
    runs = []
    now: dict[str, dict[str, str | None]] = {}
    for path, data in _recorded(opened.state_dir / VALIDATE_DIR, "result.json"):
        name = data.get("candidate")
        if name in candidates and name not in now:
            now[name] = candidate_results.state_digests(opened, name)
        judged = now.get(name)
        runs.append(
            {
                "run": path.parent.name,
                "candidate": name,
                "data": data.get("data"),
                "master": data.get("master"),
                "verdict": data.get("verdict"),
                "rows": data.get("rows"),
                "rows_compared": data.get("rows_compared"),
                "original_raised": data.get("original_raised"),
                "mismatches": data.get("mismatches"),
                "counts": {kind: n for kind, n in (data.get("counts") or {}).items() if n},
                "extra_rows": data.get("extra_rows"),
                "duplicate_rows": data.get("duplicate_rows"),
                "deviations_not_applied": data.get("deviations_not_applied") or [],
                "confined": data.get("confined"),
                "current": judged is not None and judged["candidate_digest"] is not None and all(data.get(key) == value for key, value in judged.items()),
                "json": str(path),
            }
        )
    return runs


def _arrow_batch_runs(opened: Workspace) -> list[dict[str, Any]]:
    runs = []
    for path, data in _recorded(opened.state_dir / BENCH_DIR, "arrow_batch.json"):
        runs.append({"candidate": data.get("candidate"), "best": data.get("best"), "recommendation": data.get("recommendation"), "chart": (data.get("artifacts") or {}).get("chart"), "json": str(path)})
    return runs


def _profiles(opened: Workspace) -> list[dict[str, Any]]:
    found = []
    for path, data in _recorded(opened.state_dir / PROFILES_DIR, "profile.json"):
        found.append(
            {
                "run": path.parent.name,
                "candidate": data.get("candidate"),
                "backend": data.get("backend"),
                "note": data.get("note"),
                "hotspots": (data.get("hotspots") or [])[:5],
                "kernels": (data.get("kernels") or [])[:5],
                "codegen": data.get("codegen"),
                "gpu_share": data.get("gpu_share"),
                "hints": data.get("hints") or [],
                "json": str(path),
            }
        )
    return found


def _recorded(folder: Path, filename: str) -> list[tuple[Path, dict[str, Any]]]:
    """(path, content) of each run's `filename` under `folder`, oldest run first; unreadable ones left out."""
    found = []
    for path in sorted(folder.glob(f"*/{filename}")):
        try:
            found.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            continue
    return found


def _call_sites(root: SandboxRoot, opened: Workspace) -> list[dict[str, Any]]:
    """Where the job calls the UDF (by name), with the statement around each call, read without running the job."""
    udf = opened.config.udf
    try:
        source = root.resolve(udf.source, what="source").read_text(encoding="utf-8")
        tree = ast.parse(source)
    except Exception:  # the job moved or changed: the report still stands without its call sites
        return []
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With, ast.Try))]
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        around = min((s for s in statements if s.lineno <= node.lineno <= (s.end_lineno or s.lineno)), key=lambda s: (s.end_lineno or s.lineno) - s.lineno, default=None)
        if isinstance(node.func, ast.Name) and node.func.id == udf.name:
            sites.append({"line": node.lineno, "call": ast.unparse(node), "args": [ast.unparse(a) for a in node.args], "statement": ast.unparse(around) if around else ast.unparse(node), "sql": False})
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("sql", "expr", "selectExpr") and udf.name in ast.unparse(node):
            sites.append({"line": node.lineno, "call": ast.unparse(node)[:300], "args": [], "statement": ast.unparse(around) if around else ast.unparse(node), "sql": True})
    return sorted(sites, key=lambda s: s["line"])


# --- the recommendation --------------------------------------------------------------------------


def _recommendation(opened: Workspace, data: dict[str, Any]) -> dict[str, Any]:
    verified = {name: c for name, c in data["candidates"].items() if c["verified"]}
    if not verified:
        pending = ", ".join(sorted(data["candidates"])) or "none written yet"
        return {
            "candidate": None,
            "summary": f"no candidate is verified yet (candidates: {pending}): ship none. A candidate needs byte_compare equal and audit_candidate PASS on its current file.",
            "speedup": None,
            "wiring": None,
        }

    def latest_speedup(name: str) -> tuple[float | None, list[float] | None, dict[str, Any]]:
        digest = verified[name]["digest"]
        current = [b for b in data["benchmarks"] if b["candidate"] == name and b.get("candidate_digest") == digest and b["speedup"] is not None]
        return (current[-1]["speedup"], current[-1]["speedup_ci"], {"jvm_compiler": current[-1].get("jvm_compiler")}) if current else (None, None, {})

    measured = {name: latest_speedup(name) for name in sorted(verified)}
    # a win is faster over its whole interval; a point estimate above 1 with an interval reaching below is not one
    winners = [name for name, (speedup, interval, _) in measured.items() if speedup is not None and (interval[0] if interval else speedup) > 1.0]
    if not winners:
        numbers = "; ".join(_speed_text(name, *measured[name]) for name in measured)
        return {
            "candidate": None,
            "summary": f"ship none: keep the UDF. No verified candidate is faster than the original over its whole benchmark interval ({numbers}).",
            "speedup": None,
            "wiring": None,
        }
    chosen = max(winners, key=lambda name: (measured[name][0], name))
    speedup, interval, environment = measured[chosen]
    kind = verified[chosen]["target"]
    others = [name for name in measured if name != chosen]
    compared = f" The other verified candidates: {'; '.join(_speed_text(name, *measured[name]) for name in others)}." if others else ""
    deviations_note = f"; it carries {len(verified[chosen]['deviations'])} recorded deviation(s), listed above" if verified[chosen]["deviations"] else ""
    summary = f"ship candidate/{chosen}.py ({kind}): equal to the original on every compared row and audited clean, {_speed_text(chosen, speedup, interval, environment, named=False)}{deviations_note}.{compared}"
    return {"candidate": chosen, "summary": summary, "speedup": speedup, "speedup_ci": interval, "wiring": wiring(opened, chosen, kind, data["call_sites"], data["arrow_batch"])}


def _speed_text(name: str, speedup: float | None, interval: list[float] | None, environment: dict[str, Any] | None = None, named: bool = True) -> str:
    who = f"{name} " if named else ""
    if speedup is None:
        return f"{who}not benchmarked on its current file (run_benchmark(workspace, {name!r}) measures it)"
    where = f" (95% CI {interval[0]:.2f}-{interval[1]:.2f})" if interval else ""
    return f"{who}{speedup:.2f}x the original's speed in run_benchmark{where}{compiler_note(environment)}"


def wiring(opened: Workspace, name: str, kind: str, call_sites: list[dict[str, Any]], arrow_batch: list[dict[str, Any]]) -> str:
    """The exact code that replaces the UDF in the job: what run_benchmark timed, wired the same way."""
    udf = opened.config.udf
    module = name
    copy = f"Copy `candidate/{name}.py` next to the job (or anywhere on the job's Python path)."
    if kind == "sql" and udf.pandas_form == "aggregate":
        sites = ", ".join(f"line {s['line']}" for s in call_sites) or "none found by name"
        return "\n".join(
            [
                copy,
                "",
                "```python",
                f"from {module} import build",
                "```",
                "",
                f"In each groupBy(...).agg(...) that calls the aggregation ({sites}), replace `{udf.name}(cols...)` with `build(cols...)` (columns, not names: "
                "`build(F.col(\"amount\"))`): it is an aggregate Column that Spark computes without Python, with the same alias.",
                f"Then delete the `{udf.name}` UDF definition at {udf.source}:{udf.source_line}.",
            ]
        )
    if kind == "sql":
        helper = f"with_{udf.name}"
        code = [
            "from pyspark.sql import Column",
            "from pyspark.sql import functions as F",
            "",
            f"from {module} import build",
            "",
            "",
            f"def {helper}(frame, name, *args):",
            f'    """frame with column `name` = {udf.name}(*args), computed in Spark (no Python UDF)."""',
            "    built = build(*[F.col(a) if isinstance(a, str) else a for a in args])",
            "    if isinstance(built, Column):",
            "        return frame.withColumn(name, built)",
            "    for step, column in built:  # helper steps, as byte_compare and run_benchmark applied them",
            "        frame = frame.withColumn(step, column)",
            "    return frame.withColumn(name, F.col(built[-1][0])).drop(*[step for step, _ in built if step != name])",
        ]
        lines = [copy, "", "```python", *code, "```", ""]
        rewritten = []
        for site in call_sites:
            if site["sql"]:
                rewritten.append(f"- line {site['line']}: the UDF is called inside SQL text (`{site['statement'][:120]}`); move that expression to the DataFrame API and use `{helper}` there.")
                continue
            replacement = with_column_rewrite(site["statement"], udf.name, helper)
            if replacement:
                rewritten += [f"- line {site['line']}, instead of", "", "```python", site["statement"], "```", "", "  write", "", "```python", replacement, "```", ""]
            else:
                rewritten.append(f"- line {site['line']}: `{site['call'][:160]}` is not the value of a withColumn: add the column with `{helper}(frame, name, {', '.join(site['args'])})` first and use it there.")
        if rewritten:
            lines += ["In the job:", *rewritten, ""]
        lines.append("If build returns (name, Column) steps, their names must not clash with the job's own columns; rename them in the candidate if they do (and byte_compare again).")
        lines.append(f"Then delete the `{udf.name}` UDF definition at {udf.source}:{udf.source_line}.")
        return "\n".join(lines)
    return_type = udf.return_type
    wrap = "spark_arrow_aggregate" if udf.pandas_form == "aggregate" else "spark_arrow_udf"
    code = [
        f"from aether_mcp.arrow_udf import {wrap}",
        "",
        f"from {module} import evaluate",
        "",
        f'{udf.name} = {wrap}(evaluate, "{return_type}")',
    ]
    if udf.form == "spark.udf.register":
        code.append(f'spark.udf.register("{udf.name}", {udf.name})')
    lines = [
        copy[:-1] + f", and ship it to the executors with the job: `spark-submit --py-files {module}.py ...` or `spark.sparkContext.addPyFile(\"{module}.py\")`.",
        "",
        f"Replace the `{udf.name}` UDF definition at {udf.source}:{udf.source_line} ({udf.form}) with:",
        "",
        "```python",
        *code,
        "```",
        "",
        f"Every call site stays as it is ({', '.join('line ' + str(s['line']) for s in call_sites) or 'none found by name'}): `{udf.name}` is now "
        + ("a grouped-aggregate Arrow UDF (PySpark 4.1+) that hands `evaluate` each group's columns" if udf.pandas_form == "aggregate" else "a scalar Arrow UDF (PySpark 4.1+) that hands `evaluate` whole Arrow batches")
        + ", converted exactly as byte_compare checked them and as run_benchmark timed them. "
        "The job's Python workers need aether-mcp installed (`pip install aether-mcp`, no Spark or GPU extras needed) for that conversion.",
    ]
    best = [run for run in arrow_batch if run["candidate"] == name and run.get("recommendation")]
    if best:
        lines += ["", f"Arrow batch size: {best[-1]['recommendation']}"]
    return "\n".join(lines)


# --- rendering -----------------------------------------------------------------------------------


def render_markdown(data: dict[str, Any]) -> str:
    udf = data["udf"]
    out: list[str] = [f"# Conversion report: `{udf['name']}`", "", f"Workspace `{data['workspace']}`, generated {data['generated']}.", ""]
    recommendation = data["recommendation"]
    out += ["**Recommendation:** " + recommendation["summary"], ""]

    out += ["## The UDF and its source", ""]
    signature = ", ".join(f"{a['name']} {a['type']}" for a in udf["args"])
    out += [f"`{udf['name']}({signature}) -> {udf['return_type']}`, a {udf['kind']} UDF ({udf['form']}) at `{udf['source']}:{udf['source_line']}`.", ""]
    if data["call_sites"]:
        out += ["Called at: " + "; ".join(f"line {s['line']} `{s['call'][:100]}`" for s in data["call_sites"]), ""]
    out += ["```python", udf["original_source"].rstrip(), "```", ""]

    tests = data["tests"]
    out += ["## Tests", ""]
    out.append(f"- cases: {tests['cases'] if tests['cases'] is not None else 'unknown'} in tests/cases.py; test files: {', '.join(tests['test_files']) or 'none'}")
    run = tests["original_run"]
    out.append(f"- on the original: {run['passed']} passed, {run['failed']} failed, {run['errors']} errors (run {run['run_id']}{', tests changed since' if run['tests_changed_since'] else ''})" if run else "- not run on the original yet")
    coverage, mutation = tests["coverage"], tests["mutation"]
    out.append(f"- coverage of the original: {coverage['line_percent']:.0f}% of lines, {coverage['branch_percent']:.0f}% of branches; gate {coverage['gate']['status']}: {coverage['gate']['detail']}" if coverage else "- coverage: not measured on the current original and cases")
    out.append(f"- mutation score: {mutation['killed']} of {mutation['total']} mutants killed ({mutation['score']:.2f}); gate {mutation['gate']['status']}: {mutation['gate']['detail']}" if mutation else "- mutation score: not measured on the current original and cases")
    out.append(f"- frozen: {'yes, since ' + str(tests['frozen_since']) if tests['frozen'] else 'no'}; unfreezes: {len(tests['unfreezes'])}")
    for entry in tests["unfreezes"]:
        out.append(f"  - {entry.get('time', '?')}: {entry.get('reason', '?')} (files changed: {', '.join(entry.get('changed', []) or []) or 'none'})")
    if tests["justifications"]:
        out.append("- justifications:")
        out += [f"  - `{item}`: {reason}" for item, reason in sorted(tests["justifications"].items())]
    out.append("")

    out += ["## Candidates", ""]
    if data["candidates"]:
        out += ["| candidate | target | tests | byte_compare | audit | deviations | verified |", "|---|---|---|---|---|---|---|"]
        for name, c in data["candidates"].items():
            tests_cell = f"{c['tests']['passed']} passed, {c['tests']['failed']} failed" if c["tests"] else "not run"
            compare = c["byte_compare"]
            compare_cell = (
                (f"equal on {compare['rows_compared']} rows" if compare["equal"] else "no verdict (too little evidence)" if compare["equal"] is None else f"{compare['mismatched']} mismatches")
                + _where(compare)
                + (" (stale)" if compare["candidate_changed_since"] else "")
                if compare
                else "not run"
            )
            audit = c["audit"]
            audit_cell = f"{audit['verdict']}" + (f", {audit['blocking']} blocking" if audit["blocking"] else "") + (" (stale)" if audit["candidate_changed_since"] else "") if audit else "not run"
            out.append(f"| {name} | {c['target']} | {tests_cell} | {compare_cell} | {audit_cell} | {len(c['deviations'])} | {'yes' if c['verified'] else 'no'} |")
        out += ["", "Each cell is the strongest result on the candidate's current content (a mismatch or a failing audit outweighs later clean runs). "
                "(stale: the candidate, the original or the deviations differ from every recorded result; the newest is shown.)", ""]
    else:
        out += ["No candidate written yet.", ""]

    out += ["## Recorded deviations", ""]
    if data["deviations"]:
        for name, recorded in data["deviations"].items():
            out += [f"- {name}: {d}" for d in recorded]
    else:
        out.append("None: every comparison was exact (null only null, NaN only NaN, -0.0 apart, floats bit for bit).")
    out.append("")

    out += ["## Benchmarks", ""]
    if data["benchmarks"]:
        out += ["| run | candidate | backend | rows | floor s | original s | candidate s | speedup (95% CI) | overhead removed | master, cores |", "|---|---|---|---|---|---|---|---|---|---|"]
        for b in data["benchmarks"]:
            modes = b["modes"]
            cell = lambda mode, modes=modes: f"{modes[mode]['median_s']:.3f}" if mode in modes else "-"  # noqa: E731
            speed = f"{b['speedup']:.2f}x ({b['speedup_ci'][0]:.2f}-{b['speedup_ci'][1]:.2f})" if b["speedup"] is not None and b["speedup_ci"] else "-"
            overhead = f"{b['overhead_eliminated']:.0%}" if b["overhead_eliminated"] is not None else "-"
            where = b["backend"] + (" (verified)" if b["gpu_verified"] else " (not verified)" if b["backend"] == "gpu" else "")
            out.append(f"| {b['run']} | {b['candidate']} | {where} | {b['rows']:,} | {cell('floor')} | {cell('original')} | {cell('candidate')} | {speed} | {overhead} | {b['master']}, {b['cores']}{' (quick JVM compiler)' if b.get('jvm_compiler') == 'quick' else ''} |")
        out.append("")
        out += [f"![{b['candidate']} {b['run']}]({b['chart']})" for b in data["benchmarks"] if b.get("chart")]
        out.append("")
    else:
        out += ["No run_benchmark yet.", ""]
    for run in data["arrow_batch"]:
        out += [f"Arrow batch sweep of {run['candidate']}: {run['recommendation']}", ""]

    out += _validation_section(data["validations"], recommendation.get("candidate"))

    out += ["## Profiles", ""]
    if data["profiles"]:
        for p in data["profiles"]:
            out.append(f"- {p['run']} ({p['candidate']}, backend {p['backend']}): {p['note']}")
            if p.get("codegen"):
                cg = p["codegen"]
                out.append(f"  - whole-stage codegen: {cg['in_codegen']} of {cg['operators']} operators; outside: {', '.join(cg['outside_codegen']) or 'none'}")
            for k in p["kernels"]:
                out.append(f"  - kernel: `{str(k['name'])[:120]}`: {k['share']:.0%} of GPU time, {k['instances']} launches, mean {k['mean_ns'] / 1000:.1f} us")
            if p.get("gpu_share") is not None:
                out.append(f"  - GPU busy {p['gpu_share']:.0%} of the wall time")
            for h in p["hotspots"]:
                where = f"{h['function']} ({h['location']})"
                cost = f", own {h['own_s']}s, cumulative {h['cumulative_s']}s" if h.get("own_s") is not None else ""
                out.append(f"  - hotspot: `{where[:200]}`: {h['calls']} calls{cost}")
            out += [f"  - hint: {hint}" for hint in p["hints"]]
    else:
        out.append("No nsys_profile yet.")
    out.append("")

    out += ["## Optimization journal", ""]
    if data["journal"]:
        out += ["| time | candidate | step | label | accepted | speedup vs best (95% CI) | reason |", "|---|---|---|---|---|---|---|"]
        for e in data["journal"]:
            speed = f"{e['speedup']:.3f}x ({e['speedup_ci'][0]:.3f}-{e['speedup_ci'][1]:.3f})" if e.get("speedup") is not None and e.get("speedup_ci") else "-"
            reason = str(e.get("reason", "")).replace("|", "\\|")[:200]
            out.append(f"| {e.get('time', '')} | {e.get('candidate')} | {e.get('step')} | {str(e.get('label', '')).replace('|', '/')} | {'yes' if e.get('accepted') else 'no' + (', reverted' if e.get('reverted') else '')} | {speed} | {reason} |")
    else:
        out.append("No try_optimization yet.")
    out.append("")

    out += ["## Recommendation", "", recommendation["summary"], ""]
    if recommendation.get("wiring"):
        out += ["### How to wire it into the job", "", recommendation["wiring"], ""]
    candidate = f" --candidate {recommendation['candidate']}" if recommendation.get("candidate") else ""
    out += [
        "## Before shipping: verify",
        "",
        "Everything above is read from records the tools wrote under `.aether/`; a shell running as the same user "
        "could rewrite them (and re-sign them with the key). Before shipping, run:",
        "",
        "```sh",
        f"aether-mcp verify --root {data['root']} {data['workspace_relative']}{candidate}",
        "```",
        "",
        "It trusts no record: it extracts the UDF again from the job source and requires `original/` to match it, checks every "
        "case against that original through Spark, measures the coverage and mutation gates again, runs a fresh audit_candidate "
        "(with its own byte_compare) of the candidate, and says whether git has the job source unmodified. Exit 0 means all of that holds.",
        "",
    ]
    return "\n".join(out).rstrip() + "\n"


def _validation_section(runs: list[dict[str, Any]], recommended: str | None) -> list[str]:
    out = ["## Validation on data", ""]
    if runs:
        out += ["| run | candidate | data | master | rows compared | original raised | verdict | mismatches by kind |", "|---|---|---|---|---|---|---|---|"]
        for v in runs:
            kinds = dict(v["counts"])
            kinds.update({k: v[k] for k in ("extra_rows", "duplicate_rows") if v.get(k)})
            kinds_cell = ", ".join(f"{kind} {n}" for kind, n in kinds.items()) or "-"
            verdict = f"{str(v['verdict']).split(':')[0]}{'' if v['current'] else ' (stale)'}"
            where = f"{v['master']}{'' if v['confined'] else ' (unconfined)'}{'' if str(v['master']).startswith('local') else ' (executors unconfined)'}"
            out.append(f"| {v['run']} | {v['candidate']} | `{str(v['data']).replace('|', '%7C')}` | {where} | {v['rows_compared']:,} of {v['rows']:,} | {v['original_raised']:,} | {verdict} | {kinds_cell} |")
        out += ["", "The original and the candidate over the job's own data, compared inside Spark (validate_on_data). "
                "(stale: the candidate, the original or the deviations differ from the ones that run judged.)", ""]
    else:
        out += ["No validate_on_data yet.", ""]
    if recommended and not any(v["candidate"] == recommended and v["current"] and v["verdict"] == "equal" for v in runs):
        out += [f"`{recommended}` has no equal validation on data for its current content: run `validate_on_data(workspace, \"{recommended}\", data)` "
                "on a sample of the job's real input before shipping.", ""]
    return out


def _where(compare: dict[str, Any]) -> str:
    """Where a comparison ran, as the report's table shows it: ', cpu', ', cpu, simulated kernel', ', gpu verified', ', unconfined'."""
    backend = compare.get("backend", "cpu")
    unconfined = "" if compare.get("confined") else ", unconfined"
    if compare.get("simulated"):
        return f", {backend}, simulated kernel{unconfined}"
    if backend == "gpu":
        return (", gpu verified" if compare.get("gpu_verified") else ", gpu (not verified)") + unconfined
    return f", {backend}{unconfined}"
