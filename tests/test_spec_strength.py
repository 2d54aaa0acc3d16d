"""coverage_report, mutation_score, suggest_inputs, record_cases, justify, audit_tests, freeze: the spec is measured."""

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import EXAMPLE_UDFS, EXAMPLES, SQL_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import byte_compare, case_recording, files, freezing, spec_strength, suite_audit, suite_runs, workspaces

pytestmark = pytest.mark.slow


def example_workspace(tmp_path, example, udf, arg_types) -> tuple[SandboxRoot, str]:
    shutil.copytree(EXAMPLES / example, tmp_path / example)
    root = SandboxRoot(tmp_path)
    return root, workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types).workspace


def one_case(example: str) -> str:
    first = read_case_rows(EXAMPLES / example / "cases.py")[0]
    return "CASES = [" + json.dumps({"args": first, "expected": None}).replace("null", "None").replace("NaN", 'float("nan")') + "]\n"


@pytest.mark.parametrize("example, udf, arg_types, candidate", EXAMPLE_UDFS, ids=[e[0] for e in EXAMPLE_UDFS])
def test_one_case_is_weak_and_the_good_cases_reach_the_gates(tmp_path, workers, example, udf, arg_types, candidate):
    root, ws = example_workspace(tmp_path, example, udf, arg_types)
    files.write_file(root, ws, "tests/cases.py", one_case(example))
    coverage = spec_strength.coverage_report(root, workers, ws)
    mutation = spec_strength.mutation_score(root, workers, ws)
    assert coverage.branch_percent < 100 and coverage.gate.status == "fail" and coverage.uncovered
    assert mutation.score < 0.8 and mutation.gate.status == "fail" and mutation.survivors
    assert all(s.diff.startswith("--- original") and s.line > 0 for s in mutation.survivors)

    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / example / "cases.py").read_text())
    coverage = spec_strength.coverage_report(root, workers, ws)
    mutation = spec_strength.mutation_score(root, workers, ws)
    assert (coverage.line_percent, coverage.branch_percent, coverage.gate.status) == (100.0, 100.0, "pass"), coverage.uncovered
    assert mutation.score >= 0.8 and mutation.gate.status == "pass", mutation.survivors
    assert mutation.duration_s < 60


def test_suggest_inputs_then_record_cases_closes_the_gaps(tmp_path, workers):
    root, ws = example_workspace(tmp_path, "loyalty_pricing", "loyalty_discount", {"age": "int"})
    recorded = case_recording.record_cases(root, workers, ws, [[30, 100.0, "gold"]], why="a gold customer")
    assert recorded.recorded[0].expected == "90.0" and recorded.cases_total == 1
    suggestions = spec_strength.suggest_inputs(root, workers, ws).suggestions
    targets = " ".join(t for s in suggestions for t in s.targets)
    assert "uncovered line:" in targets and "kills surviving mutant" in targets and "boundary 65 of age" in targets and "age is null" in targets
    case_recording.record_cases(root, workers, ws, [s.args for s in suggestions], why="suggested")
    assert spec_strength.coverage_report(root, workers, ws).gate.status == "pass"
    assert spec_strength.mutation_score(root, workers, ws).score >= 0.8
    assert suite_runs.run_tests(root, workers, ws, "original").failed == 0


def test_a_mutant_a_simple_row_kills_is_not_likely_equivalent_and_suggestions_are_new_rows(tmp_path, workers):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "flags.py").write_text(textwrap.dedent(
        '''
        from pyspark.sql.functions import udf


        @udf("bigint")
        def flag(code: str, n: int, k: int) -> int:
            if code == "" and n == 0 and k == 1:
                return 1
            return 2
        '''
    ))
    root = SandboxRoot(tmp_path)
    ws = workspaces.init_workspace(root, "jobs/flags.py", "flag").workspace
    case_recording.record_cases(root, workers, ws, [["x", 5, 5], ["", 3, 3]], why="neither")
    mutation = spec_strength.mutation_score(root, workers, ws)
    assert mutation.survivors and mutation.probe_rows > 0
    # every survivor here changes what ("", 0, 1) returns: a row anyone would try
    assert not any(s.likely_equivalent for s in mutation.survivors), [(s.description, s.likely_equivalent) for s in mutation.survivors]
    suggestions = spec_strength.suggest_inputs(root, workers, ws).suggestions
    offered = [json.dumps(s.args) for s in suggestions]
    assert len(offered) == len(set(offered))
    assert ["x", 5, 5] not in [s.args for s in suggestions] and ["", 3, 3] not in [s.args for s in suggestions]  # recorded already


def test_record_cases_records_real_outputs_exceptions_and_skips_duplicates(root, workspace, workers):
    result = case_recording.record_cases(root, workers, workspace, [[3.0, True], [-2.0, False], ["NaN", False], [3.0, True]], why="fees")
    assert [(c.expected, c.raises) for c in result.recorded] == [("12.98", None), (None, "ValueError: weight must be positive"), ("nan", None)]
    assert result.duplicates == [[3.0, True]] and result.cases_total == 8
    text = (Path(workspace) / "tests" / "cases.py").read_text()
    assert '"args": [3.0, True], "expected": 12.98' in text and '"raises": \'ValueError\'' in text and 'float("nan")' in text
    assert suite_runs.run_tests(root, workers, workspace, "original").failed == 0
    with pytest.raises(ToolError, match=r"input 0, argument 'weight' \(double\): 'heavy' is not a value of that type"):
        case_recording.record_cases(root, workers, workspace, [["heavy", True]])
    with pytest.raises(ToolError, match="inputs is empty"):
        case_recording.record_cases(root, workers, workspace, [])


def test_justify_explains_what_cannot_be_covered_or_killed(tmp_path, workers):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "guard.py").write_text(textwrap.dedent(
        '''
        from pyspark.sql.functions import udf


        @udf("double")
        def half(x: float) -> float:
            if isinstance(x, str):  # defensive: Spark never passes a string for a double
                return None
            return None if x is None else x / 2
        '''
    ))
    root = SandboxRoot(tmp_path)
    ws = workspaces.init_workspace(root, "jobs/guard.py", "half").workspace
    case_recording.record_cases(root, workers, ws, [[4.0], [None], ["NaN"], [-0.0]])
    coverage = spec_strength.coverage_report(root, workers, ws)
    dead = next(u for u in coverage.uncovered if u.kind == "line")
    assert coverage.gate.status == "fail" and dead.source.strip() == "return None"
    with pytest.raises(ToolError, match="reason is too short"):
        spec_strength.justify(root, ws, dead.item, "dead")
    with pytest.raises(ToolError, match=rf"'line:99' is not an uncovered line or branch or a surviving mutant.*open items: {dead.item}"):
        spec_strength.justify(root, ws, "line:99", "unreachable because Spark never passes a string")
    for item in [u.item for u in coverage.uncovered]:
        justified = spec_strength.justify(root, ws, item, "unreachable: Spark never passes a string for a double column")
    # the gate counts the justifications at once: no second coverage_report before freezing
    assert justified.gates["coverage"].status == "pass"
    status = workspaces.workspace_status(root, ws)
    assert next(g for g in status.gates if g.name == "branch_coverage").status == "pass"
    assert status.justifications[dead.item].startswith("unreachable")
    assert spec_strength.coverage_report(root, workers, ws).gate.status == "pass"
    # results of older cases are stale, and justify says which tool to run again
    case_recording.record_cases(root, workers, ws, [[9.0]])
    with pytest.raises(ToolError, match=r"open items: none in current results\. The coverage_report results are of an older original/udf.py or tests/cases.py: call coverage_report\(workspace\) again"):
        spec_strength.justify(root, ws, "line:99", "unreachable because Spark never passes a string")


def test_freeze_refuses_until_the_gates_hold_then_pins_the_tests(tmp_path, workers):
    root, ws = example_workspace(tmp_path, "loyalty_pricing", "loyalty_discount", {"age": "int"})
    files.write_file(root, ws, "tests/cases.py", one_case("loyalty_pricing"))
    with pytest.raises(ToolError, match="the phase-1 gates do not all hold yet: tests_pass_on_original"):
        freezing.freeze_tests(root, ws)
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "loyalty_pricing" / "cases.py").read_text())
    files.write_file(root, ws, "candidate/c.py", (EXAMPLES / "loyalty_pricing" / "candidates" / "discount_sql.py").read_text())
    suite_runs.run_tests(root, workers, ws, "original")
    spec_strength.coverage_report(root, workers, ws)
    mutation = spec_strength.mutation_score(root, workers, ws)
    for survivor in mutation.survivors:
        spec_strength.justify(root, ws, f"mutant:{survivor.mutant_id}", "equivalent: the change never alters a rounded cent")
    frozen = freezing.freeze_tests(root, ws)
    assert frozen.cases == 26 and frozen.files == ["tests/cases.py", "tests/test_behaviour.py"]
    assert suite_runs.run_tests(root, workers, ws, "candidate:c").passed == 26

    # Weakening the spec to let a candidate through is refused, never silent.
    files.write_file(root, ws, "tests/cases.py", "CASES = []\n")
    for check in (lambda: suite_runs.run_tests(root, workers, ws, "candidate:c"), lambda: byte_compare.byte_compare(root, workers, ws, "c", hidden_rows=100)):
        with pytest.raises(ToolError, match="the tests are frozen and these files changed since: tests/cases.py"):
            check()
    with pytest.raises(ToolError, match="the tests are frozen .*record_cases would change them"):
        case_recording.record_cases(root, workers, ws, [[1, 1.0, "x"]])
    with pytest.raises(ToolError, match="reason is too short"):
        freezing.unfreeze_tests(root, ws, "because")
    unfrozen = freezing.unfreeze_tests(root, ws, "rewriting the cases from scratch")
    assert unfrozen.changed_since_freeze == ["tests/cases.py"]
    assert [(e["event"], e["verified"]) for e in unfrozen.log] == [("freeze", True), ("unfreeze", True)]
    assert workspaces.workspace_status(root, ws).freeze.log[-1]["reason"] == "rewriting the cases from scratch"


def test_a_freeze_record_edited_or_deleted_outside_the_server_is_detected(tmp_path, workers):
    root, ws = example_workspace(tmp_path, "loyalty_pricing", "loyalty_discount", {"age": "int"})
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "loyalty_pricing" / "cases.py").read_text())
    files.write_file(root, ws, "candidate/c.py", SQL_CANDIDATE)
    suite_runs.run_tests(root, workers, ws, "original")
    spec_strength.coverage_report(root, workers, ws)
    for survivor in spec_strength.mutation_score(root, workers, ws).survivors:
        spec_strength.justify(root, ws, f"mutant:{survivor.mutant_id}", "equivalent: the change never alters a rounded cent")
    freezing.freeze_tests(root, ws)
    record = Path(ws) / ".aether" / "freeze.json"
    data = json.loads(record.read_text())
    data["body"]["files"]["tests/cases.py"] = "0" * 64
    record.write_text(json.dumps(data))
    with pytest.raises(ToolError, match="freeze record under .aether/ was changed outside the server"):
        byte_compare.byte_compare(root, workers, ws, "c", hidden_rows=10)
    record.unlink()
    with pytest.raises(ToolError, match="the freeze record under .aether/ was deleted outside the server"):
        byte_compare.byte_compare(root, workers, ws, "c", hidden_rows=10)


WEAK_TESTS = {
    "no_assertion": "def test_runs(udf_under_test):\n    udf_under_test([[1.0, True]])\n",
    "weak_assertion": "def test_not_null(udf_under_test):\n    out = udf_under_test([[1.0, True]])\n    assert out[0] is not None\n    assert len(out) == 1\n",
    "skipped": "import pytest\n\n@pytest.mark.skip(reason='later')\ndef test_later(udf_under_test):\n    assert udf_under_test([[1.0, True]]) == [9.98]\n",
    "swallowed_failure": "def test_swallow(udf_under_test):\n    try:\n        assert udf_under_test([[1.0, True]]) == [0.0]\n    except AssertionError:\n        pass\n",
    "tolerance": "import pytest\n\ndef test_close(udf_under_test):\n    assert udf_under_test([[1.0, True]])[0] == pytest.approx(9.98, rel=0.1)\n",
    "no_udf_call": "def test_arithmetic():\n    assert 4.99 * 2 == 9.98\n",
}


def test_audit_flags_each_weak_pattern_and_nothing_in_good_tests(root, workspace, workers):
    clean = suite_audit.audit_tests(root, workers, workspace)
    assert clean.clean and clean.tests_reviewed == 1, clean.findings
    for rule, source in WEAK_TESTS.items():
        files.write_file(root, workspace, f"tests/test_{rule}.py", source)
    cases = Path(workspace) / "tests" / "cases.py"
    cases.write_text(cases.read_text().replace("CASES = [", 'CASES = [\n    {"args": [1.0, False], "expected": 4.99, "why": "again"},'))
    findings = suite_audit.audit_tests(root, workers, workspace).findings
    by_file = {}
    for finding in findings:
        by_file.setdefault(finding.file, set()).add(finding.rule)
    for rule in WEAK_TESTS:
        assert rule in by_file[f"tests/test_{rule}.py"], (rule, by_file)
    assert "duplicate_case" in by_file["tests/cases.py"]
    assert "passes_on_canary" in by_file["tests/test_no_assertion.py"]
    assert not any(f.file == "tests/test_behaviour.py" for f in findings)
    example = next(f for f in findings if f.rule == "swallowed_failure")
    assert example.line == 4 and example.test == "test_swallow" and example.why and example.fix


def test_audit_tests_lists_fifty_findings_and_writes_every_one_to_its_record(root, workspace, workers):
    body = "".join(f"def test_arithmetic_{n}():\n    assert {n} * 2 == {n * 2}\n\n\n" for n in range(60))
    files.write_file(root, workspace, "tests/test_many.py", body)
    result = suite_audit.audit_tests(root, workers, workspace)
    every = json.loads(Path(result.record_path).read_text(encoding="utf-8"))
    assert len(result.findings) == 50 and result.findings_left_out == len(every) - 50 >= 60 - 50 and not result.clean
    assert [f.model_dump() for f in result.findings] == every[:50]  # the same order: file, line, rule
    assert {f["test"] for f in every if f["rule"] == "no_udf_call"} == {f"test_arithmetic_{n}" for n in range(60)}
