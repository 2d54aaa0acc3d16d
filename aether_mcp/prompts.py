"""The conversion workflow as MCP prompts: the whole loop, and one prompt per phase.

Each prompt is the text an agent follows, with the gates that decide when a phase is done and
the rules that keep a conversion honest. Clients such as Claude Code offer them as slash commands.
"""

from __future__ import annotations

RULES = """\
Rules for the whole conversion:
- Never weaken the tests to make a candidate pass. Once frozen, tests change only through
  unfreeze_tests(workspace, reason), which is logged and shown in the report.
- A behaviour difference you cannot remove is declared with record_deviation (what differs, why it
  is acceptable, which rows), never hidden; the report lists every deviation.
- The candidate must never call the original UDF, hard-code test values, work row by row in Python,
  or copy device data to the host per row: audit_candidate checks this, and a FAIL is final for
  that version.
- Keep work safe: snapshot before a risky change; revert restores byte for byte.
- Trust only the tools' verdicts (byte_compare, audit_candidate, run_benchmark); a test you ran
  yourself proves nothing to the user.
- Semantic traps (round, %, strip/trim, split, lower, str(None), overflow, NaN) are listed in the
  resource aether://notes/semantic-traps; read it before writing a candidate."""

SPECIFY = """\
Phase 1, specify: pin the original's behaviour in tests, and prove the tests strong.
1. workspace_status(workspace) shows the UDF's signature and where things stand.
2. Record cases with record_cases(workspace, inputs, why): typical rows, every branch, boundaries
   (the constants the UDF compares against, and one either side), nulls in every argument, NaN,
   +/-Infinity, -0.0, empty and padded strings, Unicode. The original's real outputs are recorded.
3. run_tests(workspace, "original") must pass.
4. coverage_report and mutation_score: close every gap with suggest_inputs -> record_cases, or
   justify(workspace, item, reason) an item that truly cannot be reached or told apart.
5. audit_tests(workspace) must find nothing that pins nothing.
6. freeze_tests(workspace). Gate: tests pass on the original, coverage and mutation gates hold."""

CONVERT = """\
Phase 2, convert: write a candidate and prove it equal to the original as Spark runs it.
0. Start from a draft: draft_candidate(workspace) translates the original into a sql candidate
   (candidate/draft.py) with Python's semantics. Where it drafts one, byte_compare it first and edit
   the draft where the judge finds a difference; where it refuses, it names the construct and line,
   and you write that candidate by hand. A draft proves nothing until byte_compare and
   audit_candidate say so.
1. Choose the target: "sql" (build(*cols) -> Column, or a list of (name, Column) steps: a step that
   later steps use more than once stays a projection, computed once) when Spark functions can
   express the logic exactly;
   "vectorized" (evaluate(*series) -> Series over whole batches; xp/array/series from
   aether_mcp.backend make one source run on NumPy/pandas and on CuPy/cuDF); "kernel" (numba.cuda)
   for numeric loops on a GPU, simulated on a CPU for correctness only. Resources
   aether://notes/spark-functions and aether://notes/gpu-idioms map Python idioms to each.
2. write_file(workspace, "candidate/<name>.py", ...); run_tests(workspace, "candidate:<name>").
   Constants and plain functions of the job's own modules may be imported (from patterns import CODES).
3. byte_compare(workspace, "<name>"): equal on the cases, the edge corpus and fresh hidden rows.
   Each mismatch is a counterexample (shrunk): fix the candidate, not the tests. Where the original
   raises, the candidate must fail too (raise in vectorized code; F.raise_error or F.assert_true in
   sql): a value there is an "original raised, candidate returned" mismatch, unless you
   record_deviation(..., returns_where_original_raises=true) and say why. equal: null means no
   verdict: too few rows on which the original returned (see evidence).
4. audit_candidate(workspace, "<name>"). Gate: verdict PASS (no cheat finding, fresh comparison equal)."""

BENCHMARK = """\
Phase 3, benchmark: measure the original, the candidate and the no-UDF floor in real Spark jobs.
1. run_benchmark(workspace, "<name>") (rows default 200,000; give `spec` when the generated data
   should follow the real distribution, e.g. valid coordinate ranges). It refuses a candidate that
   byte_compare does not find equal.
2. Read speedup with its 95% interval and overhead_eliminated ((original - candidate) /
   (original - floor)): how much of the UDF's cost is gone.
3. For vectorized candidates, tune_arrow_batch finds the Arrow batch size to set in the job.
Gate: the whole interval above 1 (faster than the UDF); otherwise try another target or optimize."""

OPTIMIZE = """\
Phase 4, optimize: profile, change one thing, keep only verified wins.
1. nsys_profile(workspace, "<name>"): nsys on a GPU, Python's profiler on CPU, the Spark plan for
   sql candidates (repeated subexpressions, codegen coverage). Its hints say what to try.
2. The first try_optimization(workspace, "<name>", label) records the current version as the best.
3. Change the candidate (one idea per step), then try_optimization(workspace, "<name>", label): it
   audits with a fresh comparison and times against the best in one interleaved run; a change is
   kept only when clean, equal and faster over the whole confidence interval (min_gain), else the
   candidate files are restored to the best byte for byte (the attempt stays in its snapshot).
4. Stop after 10 steps or 3 rejections in a row (the result's `advice` says so).
5. report(workspace): the conversion report, with the candidate to ship and the exact code that
   replaces the UDF in the job."""


def convert_udf(source: str, udf: str) -> str:
    """The whole loop for one UDF, from its job file to the report."""
    return f"""\
Convert the PySpark UDF `{udf}` in `{source}` into a faster equivalent that gives exactly the same
results, using the aether-mcp tools. Work through the four phases in order; do not start a phase
before the previous one's gate holds.

Start: init_workspace(source="{source}", udf="{udf}") (add arg_types if it asks for them).

{SPECIFY}

{CONVERT}

{BENCHMARK}

{OPTIMIZE}

{RULES}

Finish with report(workspace) and tell the user: which candidate to ship, its speedup with the
interval, any recorded deviation, the wiring code from the report's recommendation, and that
before shipping they should run `aether-mcp verify --root ROOT WORKSPACE` themselves: it
recomputes every check from the job source and trusts no record the tools wrote."""


def phase(text: str, workspace: str, candidate: str | None = None) -> str:
    """One phase's instructions for an existing workspace (and candidate, where the phase has one)."""
    body = text.replace("<name>", candidate) if candidate else text
    return f"Workspace: {workspace}\n\n{body}\n\n{RULES}"
