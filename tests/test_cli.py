"""`aether-mcp demo`: all four phases on a bundled example, as `make demo` runs it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow


def test_demo_runs_the_loop_and_prints_a_summary(tmp_path):
    kept = tmp_path / "demo"
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "aether-mcp"), "demo", "--keep", str(kept)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-3000:]
    out = completed.stdout
    assert "1. init_workspace  -> loyalty_discount(age bigint, amount double, tier string) -> double" in out
    assert "3. run_tests       -> original: 26 passed" in out
    assert "4. coverage_report -> 100% of lines, 100% of branches; mutation_score -> " in out
    assert "5. freeze_tests    -> 26 cases frozen" in out
    assert "7. run_tests       -> candidate:naive" in out and "failed" in out and "caught: args=" in out
    assert re.search(r"9\. draft_candidate -> candidate/draft\.py translated from the original \(\d+ branches, recipes PY_WHITESPACE, _half_up, .*byte_compare -> draft: equal=True on \d+ rows", out)
    assert "10. run_tests       -> candidate:discount_sql (careful rewrite): 26 passed" in out
    assert "11. byte_compare   -> discount_sql: equal=True on " in out
    assert "12. byte_compare   -> naive: equal=False, " in out
    assert "13. audit_candidate -> discount_sql: PASS (0 findings; fresh comparison equal=True)" in out  # confined: not "PASS (unconfined)"
    assert "14. audit_candidate -> shortcut (the UDF's logic, row by row): FAIL, fresh comparison equal=True" in out
    assert "row_at_a_time (static, candidate/shortcut.py:" in out
    assert re.search(r"15\. run_benchmark  -> 200,000 rows, \d+ rounds \(ended by (precision|budget|max_repeats)\): original ", out) and "of the UDF overhead removed" in out
    assert "16. nsys_profile   -> backend spark-plan (no GPU profiler sees the JVM): " in out and "operators in whole-stage codegen" in out
    assert "17. try_optimization -> step 0: recorded as the best version" in out
    assert "18. try_optimization -> step 1 ('one expression instead of steps'): accepted=False, reverted=True; audit_candidate FAIL" in out
    assert "candidate/discount_sql.py restored byte for byte: True" in out
    assert "19. report         -> ship discount_sql, " in out and "10 sections: the code that replaces the UDF in the job, then the command to verify it" in out
    assert "20. aether-mcp verify --root " in out and "-> passed: job source warn, reference pass, cases pass, coverage pass, mutation pass, candidate pass" in out
    report = kept / "aether_workspaces" / "loyalty_discount" / ".aether" / "report" / "report.md"
    assert f"report written to {report}" in out and "## Recommendation" in report.read_text()
    assert "all four phases" in out
    assert (kept / "aether_workspaces" / "loyalty_discount" / "original" / "udf.py").is_file()
    assert (kept / "aether_workspaces" / "loyalty_discount" / "candidate" / "discount_sql.py").is_file()


def test_demo_refuses_a_non_empty_keep_folder(tmp_path):
    (tmp_path / "x").write_text("mine")
    completed = subprocess.run([sys.executable, "-m", "aether_mcp", "demo", "--keep", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2 and "exists and is not empty" in completed.stderr
    assert (tmp_path / "x").read_text() == "mine"
