"""run_tests: the workspace's pytest suite through real Spark, sandboxed, with hard timeouts."""

import os
from pathlib import Path

import pytest
from conftest import SQL_CANDIDATE, VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import files, workspaces
from aether_mcp.tools.suite_runs import run_tests

pytestmark = pytest.mark.slow


def outcomes(result):
    return {t.nodeid.split("::")[-1]: t.outcome for t in result.tests}


def test_cases_pin_the_original_through_spark(root, workspace, workers):
    result = run_tests(root, workers, workspace, "original")
    assert (result.passed, result.failed, result.errors, result.total) == (5, 0, 0, 5)
    assert Path(result.log_path).is_file() and Path(result.report_path).is_file()
    gates = {g.name: g.status for g in workspaces.workspace_status(root, workspace).gates}
    assert gates["tests_pass_on_original"] == "pass"
    files.write_file(root, workspace, "tests/test_more.py", "def test_more():\n    pass\n")
    gates = {g.name: g.status for g in workspaces.workspace_status(root, workspace).gates}
    assert gates["tests_pass_on_original"] == "pending"


def test_a_wrong_expectation_fails_with_the_exact_difference(root, workspace, workers):
    cases = Path(workspace) / "tests" / "cases.py"
    cases.write_text(cases.read_text().replace('"expected": 15.98', '"expected": 15.980000000000002'))
    result = run_tests(root, workers, workspace, "original")
    assert outcomes(result)["test_case[case2]"] == "failed"
    failed = next(t for t in result.tests if t.outcome == "failed")
    assert "value: expected 15.980000000000002, got 15.98 (1 ULP apart)" in failed.message


def test_candidates_run_against_the_same_tests(root, workspace, workers):
    files.write_file(root, workspace, "candidate/fee_sql.py", SQL_CANDIDATE)
    files.write_file(root, workspace, "candidate/fee_vectorized.py", VECTORIZED_CANDIDATE)
    for target in ("candidate:fee_sql", "candidate:fee_vectorized"):
        result = run_tests(root, workers, workspace, target)
        assert (result.target, result.passed, result.failed, result.errors) == (target, 5, 0, 0), result.tests


def test_a_candidate_that_breaks_the_contract_errors_with_the_reason(root, workspace, workers):
    files.write_file(root, workspace, "candidate/no_target.py", "def build(weight, express):\n    return weight\n")
    files.write_file(
        root,
        workspace,
        "candidate/python_inside.py",
        "from pyspark.sql import functions as F\nTARGET = 'sql'\ndef build(weight, express):\n    return F.udf(lambda w: w, 'double')(weight)\n",
    )
    result = run_tests(root, workers, workspace, "candidate:no_target")
    assert result.errors == 5 and "must set TARGET to one of sql, vectorized, kernel" in result.tests[0].message
    result = run_tests(root, workers, workspace, "candidate:python_inside")
    assert result.errors == 5 and "plan still evaluates Python" in result.tests[0].message


def test_rows_that_do_not_fit_the_signature_are_explained(root, workspace, workers):
    files.write_file(
        root,
        workspace,
        "tests/test_rows.py",
        "def test_arity(udf_under_test):\n    udf_under_test([[1.0]])\n\ndef test_type(udf_under_test):\n    udf_under_test([['heavy', True]])\n",
    )
    result = run_tests(root, workers, workspace, "original")
    messages = {t.nodeid.split("::")[-1]: t.message for t in result.tests}
    assert "row 0 has 1 values but the UDF takes 2 (weight, express)" in messages["test_arity"]
    assert "row 0, argument 'weight' (double)" in messages["test_type"]


def test_a_hanging_test_is_killed_and_the_next_run_works(root, workspace, workers):
    files.write_file(root, workspace, "tests/test_hang.py", "import time\n\ndef test_hang(udf_under_test):\n    time.sleep(600)\n")
    result = run_tests(root, workers, workspace, "original", timeout_s=20)
    assert result.timed_out
    assert outcomes(result)["test_hang"] == "error"
    assert "timed out" in next(t.message for t in result.tests if t.nodeid.endswith("test_hang"))
    os.remove(Path(workspace) / "tests" / "test_hang.py")
    again = run_tests(root, workers, workspace, "original")
    assert (again.passed, again.timed_out) == (5, False)


def test_a_candidate_that_hangs_inside_spark_is_killed_with_its_worker(root, workspace, workers):
    files.write_file(root, workspace, "candidate/stuck.py", "import time\nTARGET = 'vectorized'\ndef evaluate(weight, express):\n    time.sleep(600)\n")
    files.write_file(root, workspace, "candidate/fee_sql.py", SQL_CANDIDATE)
    result = run_tests(root, workers, workspace, "candidate:stuck", timeout_s=40)
    assert result.timed_out
    recovered = run_tests(root, workers, workspace, "candidate:fee_sql")
    assert recovered.passed == 5


def test_megabytes_of_output_are_capped(root, workspace, workers):
    files.write_file(root, workspace, "tests/test_loud.py", "import sys\n\ndef test_loud():\n    sys.stdout.write('x' * 40_000_000)\n    assert False\n")
    result = run_tests(root, workers, workspace, "original")
    loud = next(t for t in result.tests if t.nodeid.endswith("test_loud"))
    assert loud.outcome == "failed" and len(loud.message) <= 2000
    assert result.output_truncated
    assert Path(result.log_path).stat().st_size < 33 * 1024 * 1024


def test_the_harness_fixture_cannot_be_replaced(root, workspace, workers):
    files.write_file(
        root,
        workspace,
        "tests/test_fake.py",
        "import pytest\n\n@pytest.fixture\ndef udf_under_test():\n    return lambda rows: [42.0 for _ in rows]\n\ndef test_fake(udf_under_test):\n    assert udf_under_test([[1.0, True]]) == [42.0]\n",
    )
    ws = Path(workspace)
    # Plumbing dropped in behind the server's back is ignored too.
    (ws / "tests" / "conftest.py").write_text(
        "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    )
    (ws / "pytest.ini").write_text("[pytest]\naddopts = -k nothing_matches\n")
    cases = ws / "tests" / "cases.py"
    cases.write_text(cases.read_text().replace('"expected": 4.99, "why": "light', '"expected": 0.0, "why": "light'))
    result = run_tests(root, workers, workspace, "original")
    assert outcomes(result)["test_fake"] == "error"
    assert "udf_under_test is provided by the harness" in next(t.message for t in result.tests if t.nodeid.endswith("test_fake"))
    assert outcomes(result)["test_case[case0]"] == "failed"


def test_results_come_from_the_report_not_the_exit_code(root, workspace, workers):
    files.write_file(root, workspace, "tests/test_exit.py", "import os\n\ndef test_exit():\n    os._exit(0)\n")
    result = run_tests(root, workers, workspace, "original")
    exited = next(t for t in result.tests if t.nodeid.endswith("test_exit"))
    assert exited.outcome == "error" and "exited (code 0) before writing its report" in exited.message


def test_a_crashed_worker_is_restarted(root, workspace, workers):
    from aether_mcp.workspace import Workspace

    spark = Workspace.open(root, workspace).config.spark
    workers.get("reference", spark).process.kill()
    result = run_tests(root, workers, workspace, "original")
    assert result.passed == 5


@pytest.mark.parametrize(
    "target, message",
    [
        ("candidate:nope", r"candidate/nope.py does not exist. Candidates in this workspace: none yet"),
        ("candidate:../x", "is not a Python module name"),
        ("originl", "is not 'original' or 'candidate:<name>'"),
    ],
)
def test_bad_targets_are_refused(root, workspace, workers, target, message):
    with pytest.raises(ToolError, match=message):
        run_tests(root, workers, workspace, target)


def test_no_tests_and_bad_timeouts_are_refused(root, workspace, workers):
    with pytest.raises(ToolError, match="timeout_s must be between 1 and 3600"):
        run_tests(root, workers, workspace, "original", timeout_s=0)
    os.remove(Path(workspace) / "tests" / "test_behaviour.py")
    with pytest.raises(ToolError, match="has no tests: write tests/test_"):
        run_tests(root, workers, workspace, "original")


def test_the_original_runs_with_the_python_udf_transport_of_the_job(root, workers):
    # PySpark converts an int returned for a double column to null with pickled rows but to a
    # float with Arrow; a UDF created at import time is pickled, one created in main() is not.
    (root.path / "jobs" / "wrong_type.py").write_text(
        "from pyspark.sql import SparkSession\nfrom pyspark.sql.functions import udf\n\n"
        "@udf('double')\ndef at_import(x: float) -> float:\n    return 1\n\n"
        "def main():\n    spark = SparkSession.builder.getOrCreate()\n\n"
        "    @udf('double')\n    def in_main(x: float) -> float:\n        return 1\n"
    )
    expected = {"at_import": "None", "in_main": "1.0"}
    for name, value in expected.items():
        created = workspaces.init_workspace(root, "jobs/wrong_type.py", name)
        files.write_file(root, created.workspace, "tests/cases.py", f"CASES = [{{'args': [2.0], 'expected': {value}, 'why': 'transport'}}]\n")
        result = run_tests(root, workers, created.workspace, "original")
        assert result.passed == 1, (name, result.tests)
