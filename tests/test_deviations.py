"""Recorded deviations: predicates over the arguments, record/remove, and comparisons relaxed exactly as declared."""

import json
from pathlib import Path

import pytest
from conftest import VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.predicates import Predicate
from aether_mcp.tools import files, workspaces
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.tools.deviation_records import record_deviation, remove_deviation

ARGS = ["weight", "express"]
# The same fee with the per-kg step written as a division: up to 2 ULP away from the original.
ULP_CANDIDATE = VECTORIZED_CANDIDATE.replace("4.99 + (w - 2.0) * 1.5", "4.99 + (w - 2.0) / (2.0 / 3.0)")
# Wrong (0.0) for parcels over a tonne, which this pipeline never ships.
SCOPED_CANDIDATE = VECTORIZED_CANDIDATE.replace("fee = np.where(express", "fee = np.where(w > 1000, 0.0, fee)\n    fee = np.where(express")


@pytest.mark.parametrize(
    ("text", "row", "expected"),
    [
        ("weight is not None and weight > 1000", [1500.0, True], True),
        ("weight is not None and weight > 1000", [None, True], False),
        ("weight > 1000", [None, True], False),  # comparing None fails: the predicate does not apply
        ("isnan(weight) or express", [float("nan"), False], True),
        ("abs(weight - 2) < 0.5 and not express", [2.25, False], True),
        ("weight in (1.0, 2.0)", [2.0, None], True),
    ],
)
def test_predicates_evaluate_over_the_arguments(text, row, expected):
    assert Predicate(text, ARGS)(row) is expected


def test_string_predicates_use_only_allowed_methods():
    predicate = Predicate("tier is None or tier.strip().lower() == 'gold'", ["tier"])
    assert predicate([" GOLD "]) and predicate([None]) and not predicate(["silver"])
    assert Predicate("tier + tier == 'xx'", ["tier"])(["x"])
    assert not Predicate("tier * 2 == 'xx'", ["tier"])(["x"])  # no string repetition (it could build huge values)
    assert not Predicate("'%s' % tier == 'x'", ["tier"])(["x"])  # nor %-formatting


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("weight >", "is not a valid expression"),
        ("price > 3", "only the UDF's arguments (weight, express) can be named"),
        ("__import__('os').system('true')", "allowed: abs, isfinite"),
        ("weight.__class__ is float", "may not use Attribute"),
        ("(lambda: 1)()", "applies_to calls"),
        ("[w for w in weight]", "may not use ListComp"),
        ("weight.real > 1", "may not use Attribute"),
    ],
)
def test_predicates_that_could_run_code_are_refused(text, message):
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Predicate(text, ARGS)


def test_record_and_remove_deviations(root, workspace):
    files.write_file(root, workspace, "candidate/fast.py", ULP_CANDIDATE)
    first = record_deviation(root, workspace, "fast", "per-kg step is a division", "within 2 ULP, far below cent rounding", ulp_tolerance=2)
    second = record_deviation(root, workspace, "candidate:fast", "tonne parcels", "the pipeline never ships them", applies_to="weight > 1000")
    assert [d.deviation_id for d in second.deviations] == ["dev-1", "dev-2"] and first.deviations[0].ulp_tolerance == 2
    stored = json.loads((Path(workspace) / "deviations" / "fast.json").read_text())
    assert [d["applies_to"] for d in stored] == [None, "weight > 1000"]
    status = workspaces.workspace_status(root, workspace)
    assert status.deviations["fast"] == [
        "dev-1: floats within 2 ULP count as equal (per-kg step is a division)",
        "dev-2: rows are out of scope (not compared) where weight > 1000 (tonne parcels)",
    ]
    with pytest.raises(ToolError, match="has no deviation 'dev-9'; its deviations: dev-1, dev-2"):
        remove_deviation(root, workspace, "fast", "dev-9")
    assert [d.deviation_id for d in remove_deviation(root, workspace, "fast", "dev-1").deviations] == ["dev-2"]
    remove_deviation(root, workspace, "fast", "dev-2")
    assert not (Path(workspace) / "deviations" / "fast.json").exists()
    assert record_deviation(root, workspace, "fast", "again after removal", "ids keep counting", ulp_tolerance=1).deviations[0].deviation_id == "dev-1"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"summary": "short", "reason": "a long enough reason", "ulp_tolerance": 2}, "at least 10 characters"),
        ({"summary": "a long enough summary", "reason": "a long enough reason"}, "must declare what it relaxes"),
        ({"summary": "a long enough summary", "reason": "a long enough reason", "ulp_tolerance": 0}, "between 1 and 1000000"),
        ({"summary": "a long enough summary", "reason": "a long enough reason", "applies_to": "open('x')"}, "applies_to calls 'open'"),
    ],
)
def test_bad_deviations_are_refused_and_nothing_is_written(root, workspace, arguments, message):
    files.write_file(root, workspace, "candidate/fast.py", ULP_CANDIDATE)
    with pytest.raises(ToolError, match=message):
        record_deviation(root, workspace, "fast", **arguments)
    assert not (Path(workspace) / "deviations").exists()


def test_a_deviation_needs_an_existing_candidate(root, workspace):
    with pytest.raises(ToolError, match="candidate/ghost.py does not exist"):
        record_deviation(root, workspace, "ghost", "a long enough summary", "a long enough reason", ulp_tolerance=2)


def test_an_unreadable_deviation_file_is_refused_with_the_way_out(root, workspace, workers):
    files.write_file(root, workspace, "candidate/fast.py", ULP_CANDIDATE)
    files.write_file(root, workspace, "deviations/fast.json", "{not json")
    with pytest.raises(ToolError, match="not a valid deviation list .*record deviations with record_deviation, or revert the file"):
        byte_compare(root, workers, workspace, "fast", hidden_rows=0)
    assert workspaces.workspace_status(root, workspace).deviations["fast"][0].startswith("unreadable:")


@pytest.mark.slow
def test_a_ulp_deviation_relaxes_floats_and_is_listed_everywhere(root, workspace, workers):
    files.write_file(root, workspace, "candidate/fast.py", ULP_CANDIDATE)
    strict = byte_compare(root, workers, workspace, "fast", hidden_rows=3000)
    assert not strict.equal and {m.ulp_distance for m in strict.mismatches} <= {1, 2}
    record_deviation(root, workspace, "fast", "per-kg step is a division", "within 2 ULP, far below cent rounding", ulp_tolerance=4)
    relaxed = byte_compare(root, workers, workspace, "fast", hidden_rows=3000)
    assert relaxed.equal and relaxed.policy.declared_deviations == ["dev-1: floats within 4 ULP count as equal (per-kg step is a division)"]
    # small sizes: what is asserted is how a recorded deviation is applied, which any size shows
    audited = audit_candidate(root, workers, workspace, "fast", hidden_rows_count=1000, watched_rows=(250, 2500))
    assert audited.verdict == "PASS", audited.reasons
    assert audited.comparison.declared_deviations == relaxed.policy.declared_deviations


@pytest.mark.slow
def test_an_out_of_scope_deviation_skips_exactly_those_rows(root, workspace, workers):
    files.write_file(root, workspace, "candidate/scoped.py", SCOPED_CANDIDATE)
    strict = byte_compare(root, workers, workspace, "scoped", hidden_rows=3000)
    assert not strict.equal and strict.rows_out_of_scope == 0
    record_deviation(root, workspace, "scoped", "no tonne parcels", "the pipeline never ships over 1000 kg", applies_to="weight is not None and weight > 1000")
    relaxed = byte_compare(root, workers, workspace, "scoped", hidden_rows=3000)
    assert relaxed.equal and relaxed.rows_out_of_scope > 0 and relaxed.rows_compared > 1000
    assert "dev-1: rows are out of scope (not compared) where weight is not None and weight > 1000 (no tonne parcels)" in relaxed.policy.declared_deviations
