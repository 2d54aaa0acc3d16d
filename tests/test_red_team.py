"""The red team: every cheating candidate is caught by the rule meant to catch it; every honest one passes."""

import pytest
from red_team.corpus import entries, make_workspaces

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools.cheat_audit import audit_candidate

pytestmark = pytest.mark.slow
CORPUS = entries()
# Below the audit's default of 20,000 hidden rows, to keep the suite within its time: none of these cheats depends on
# how many rows the fresh comparison draws (each is caught by a rule, the watch or a few rows' difference). The
# second red team's class cases (`# class: N`), whose whole point is what a judged run does or does not see, run at
# the audit's defaults (hidden rows, watched sizes, the job-batch run), with no size given.
HIDDEN_ROWS = 1000
# The audit's own default watch sizes. Kernels run under numba's CUDA simulator here, one Python
# call per thread, where 20,000 rows cost minutes per run: they are watched at a tenth, where
# per-row growth shows the same.
WATCHED_ROWS = {"sql": (1000, 20_000), "vectorized": (1000, 20_000), "kernel": (250, 2500)}


def _audit(root, workers, workspace, entry):
    if entry.attack_class is not None:
        return audit_candidate(root, workers, workspace, entry.name)
    return audit_candidate(root, workers, workspace, entry.name, hidden_rows_count=HIDDEN_ROWS, watched_rows=WATCHED_ROWS[entry.target])


@pytest.fixture(scope="module")
def red_team(tmp_path_factory, workers):
    """One workspace per UDF, with its cases and every corpus candidate written into it."""
    base = tmp_path_factory.mktemp("red_team")
    root = SandboxRoot(base)
    return root, make_workspaces(root, workers, base)


def test_the_corpus_has_the_promised_size():
    cheats = [e for e in CORPUS if e.expect != "honest"]
    honest = [e for e in CORPUS if e.expect == "honest"]
    assert len(cheats) >= 25
    for kind in ("sql", "vectorized", "kernel"):
        assert sum(1 for e in honest if e.target == kind) >= 8, kind
    assert all(set(e.checks) <= {"static", "dynamic", "comparison"} and e.checks for e in cheats)
    assert sum(1 for e in cheats if "dynamic" in e.checks) >= 8  # the watch is exercised, not only the static rules
    rules = {e.expect for e in cheats}
    assert {"reaches_original", "row_at_a_time", "host_round_trip", "fallback", "hard_coded", "reads_forbidden", "tampering", "escape", "memoization", "batch_dependent"} <= rules
    # classes 7 (the judge rewritten for the next candidate) and 8 (records) are tests of their own: test_clean_world.py, test_records.py
    assert {e.attack_class for e in cheats} >= {1, 2, 3, 4, 5, 6, 9, 10}


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.expect == "honest"], ids=lambda e: e.id)
def test_honest_candidates_pass(red_team, workers, entry):
    root, made = red_team
    result = audit_candidate(root, workers, made[entry.udf], entry.name, hidden_rows_count=HIDDEN_ROWS, watched_rows=WATCHED_ROWS[entry.target])
    blocking = [f for f in result.findings if f.severity == "block"]
    assert result.verdict == "PASS", (result.reasons, blocking)  # and confined: not "PASS (unconfined)"
    assert result.watched_rows_compared > 0 or entry.target == "sql"


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.expect != "honest"], ids=lambda e: e.id)
def test_cheats_are_caught_by_their_rule(red_team, workers, entry):
    root, made = red_team
    result = _audit(root, workers, made[entry.udf], entry)
    if entry.attack_class is not None:
        assert result.comparison.rows_compared + result.comparison.original_raised > HIDDEN_ROWS, result.comparison  # the default draw, not the cut one
    found = {(f.rule, f.check) for f in result.findings if f.severity == "block"}
    assert result.verdict == "FAIL"
    if entry.expect == "unequal":
        assert result.comparison.equal is False, result.reasons
        return
    for check in entry.checks:
        assert (entry.expect, check) in found, (entry.expect, check, found, result.reasons)
