"""The bundled examples: each UDF extracts, its cases pin it through Spark, and its candidate passes them."""

import shutil

import pytest
from conftest import EXAMPLE_UDFS, EXAMPLES

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import files, workspaces
from aether_mcp.tools.suite_runs import run_tests

pytestmark = pytest.mark.slow



@pytest.mark.parametrize("example, udf, arg_types, candidate", EXAMPLE_UDFS, ids=[e[0] for e in EXAMPLE_UDFS])
def test_example_cases_pin_the_original_and_the_candidate_passes(tmp_path, workers, example, udf, arg_types, candidate):
    shutil.copytree(EXAMPLES / example, tmp_path / example)
    root = SandboxRoot(tmp_path)
    # the CPU backend on any machine: the cases pin the original's exact bits, which a GPU's libdevice may not give
    created = workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types, backend="cpu")
    ws = created.workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / example / "cases.py").read_text())
    files.write_file(root, ws, f"candidate/{candidate}.py", (EXAMPLES / example / "candidates" / f"{candidate}.py").read_text())
    on_original = run_tests(root, workers, ws, "original")
    assert on_original.failed == 0 and on_original.errors == 0 and on_original.passed >= 12, on_original.tests
    on_candidate = run_tests(root, workers, ws, f"candidate:{candidate}")
    assert (on_candidate.passed, on_candidate.failed, on_candidate.errors) == (on_original.passed, 0, 0), on_candidate.tests
    assert (on_candidate.backend, on_candidate.simulated) == ("cpu", False)


def test_the_naive_loyalty_rewrite_is_caught(tmp_path, workers):
    shutil.copytree(EXAMPLES / "loyalty_pricing", tmp_path / "loyalty_pricing")
    root = SandboxRoot(tmp_path)
    ws = workspaces.init_workspace(root, "loyalty_pricing/job.py", "loyalty_discount").workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "loyalty_pricing" / "cases.py").read_text())
    files.write_file(root, ws, "candidate/naive.py", (EXAMPLES / "loyalty_pricing" / "candidates" / "naive_sql.py").read_text())
    result = run_tests(root, workers, ws, "candidate:naive")
    messages = " ".join(t.message for t in result.tests if t.outcome == "failed")
    assert result.failed >= 3
    assert "expected None, got nan" in messages and "'\\tgold '" in messages
