"""The red team: every cheating candidate is caught by the rule meant to catch it; every honest one passes."""

import pytest

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools.cheat_audit import audit_candidate
from red_team.corpus import entries, make_workspaces

pytestmark = pytest.mark.slow
CORPUS = entries()
HIDDEN_ROWS = 1000
WATCHED_ROWS = (250, 2500)  # the tool's default is (1000, 20000); growth shows the same at a tenth


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
    rules = {e.expect for e in cheats}
    assert {"reaches_original", "row_at_a_time", "host_round_trip", "fallback", "hard_coded", "reads_forbidden", "tampering", "escape", "memoization", "batch_dependent"} <= rules


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.expect == "honest"], ids=lambda e: e.id)
def test_honest_candidates_pass(red_team, workers, entry):
    root, made = red_team
    result = audit_candidate(root, workers, made[entry.udf], entry.name, hidden_rows_count=HIDDEN_ROWS, watched_rows=WATCHED_ROWS)
    blocking = [f for f in result.findings if f.severity == "block"]
    assert result.verdict == "PASS", (result.reasons, blocking)


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.expect != "honest"], ids=lambda e: e.id)
def test_cheats_are_caught_by_their_rule(red_team, workers, entry):
    root, made = red_team
    result = audit_candidate(root, workers, made[entry.udf], entry.name, hidden_rows_count=HIDDEN_ROWS, watched_rows=WATCHED_ROWS)
    rules = {f.rule for f in result.findings if f.severity == "block"}
    assert result.verdict == "FAIL"
    assert entry.expect in rules, (entry.expect, rules, result.reasons)
