"""`aether-mcp verify`, and what a shell running as the same user could do to the records (issue 15, classes 5-8).

A same-user shell can read the key, so it can rewrite and re-sign anything under `.aether/`:
the tools' own checks then agree with it. verify trusts none of that and must fail each time.
"""

import hashlib
import json
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES

from aether_mcp import case_file
from aether_mcp.judge.case_literals import read_cases
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import files, freezing, spec_strength, suite_runs, workspaces
from aether_mcp.verification import verify
from aether_mcp.workspace import Workspace, frozen_tests

pytestmark = pytest.mark.slow
# verify's own audit below the defaults: every failure asserted here comes before or beside the audit (extraction,
# records, the cases), which any size shows; the audit at its defaults is test_red_team.py's class cases
SMALL = {"hidden_rows": 1000, "watched_rows": (250, 1000)}


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def verified(tmp_path_factory, workers):
    """A loyalty_pricing workspace as the demo leaves it: cases pinned, gates measured, tests frozen, a clean sql candidate."""
    base = tmp_path_factory.mktemp("verify_root")
    shutil.copytree(EXAMPLES / "loyalty_pricing", base / "jobs" / "loyalty_pricing")
    _git(base, "init", "-q")
    _git(base, "add", "jobs")
    _git(base, "commit", "-q", "-m", "the job")
    root = SandboxRoot(base)
    ws = workspaces.init_workspace(root, "jobs/loyalty_pricing/job.py", "loyalty_discount", arg_types={"age": "int"}).workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "loyalty_pricing" / "cases.py").read_text())
    suite_runs.run_tests(root, workers, ws, "original")
    spec_strength.coverage_report(root, workers, ws)
    spec_strength.mutation_score(root, workers, ws)
    freezing.freeze_tests(root, ws)
    files.write_file(root, ws, "candidate/discount_sql.py", (EXAMPLES / "loyalty_pricing" / "candidates" / "discount_sql.py").read_text())
    return root, ws


def _statuses(result) -> dict[str, str]:
    return {check.name: check.status for check in result.checks}


def _cli(root: SandboxRoot, ws: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aether_mcp", "verify", "--root", str(root.path), ws, *extra], capture_output=True, text=True, timeout=600, env=os.environ.copy())


def test_verify_passes_the_workspace_it_can_recompute(verified, workers):
    root, ws = verified
    result = verify(root, workers, ws, "discount_sql", **SMALL)
    assert result.passed, result.checks
    assert _statuses(result) == {"job source": "pass", "reference": "pass", "cases": "pass", "coverage": "pass", "mutation": "pass", "candidate": "pass"}
    assert "tracked by git and unmodified" in result.checks[0].detail


def test_an_edited_job_source_in_git_fails_verify(verified, workers):
    root, ws = verified
    job = root.path / "jobs" / "loyalty_pricing" / "job.py"
    text = job.read_text()
    try:
        job.write_text(text + "\n# edited after review\n")
        result = verify(root, workers, ws, "discount_sql", **SMALL)
        assert not result.passed and _statuses(result)["job source"] == "fail"
        assert "has changes git has not committed" in result.checks[0].detail
    finally:
        job.write_text(text)


def test_class_5_an_edited_reference_re_signed_with_the_key_fails_verify(verified, workers, tmp_path):
    root, ws = _copy(verified, tmp_path)
    module = Path(ws) / "original" / "udf.py"
    module.write_text(module.read_text().replace("SENIOR_BONUS_RATE = 0.05", "SENIOR_BONUS_RATE = 0.06", 1))
    Workspace(root, Path(ws)).record_protected()  # what a shell with the key does
    assert Workspace.open_intact(root, ws).integrity().intact  # the signature cannot tell
    ended = _cli(root, ws, "--candidate", "discount_sql")
    assert ended.returncode == 1, ended.stdout + ended.stderr
    assert "FAIL  reference: original/udf.py differs from what jobs/loyalty_pricing/job.py gives" in ended.stdout
    assert "NOT verified" in ended.stdout


def test_class_6_a_planted_bytecode_file_is_tampering_and_never_what_runs(verified, workers, tmp_path):
    root, ws = _copy(verified, tmp_path)
    module = Path(ws) / "original" / "udf.py"
    edited = tmp_path / "udf.py"
    edited.write_text(module.read_text().replace("return None", "return 0.00", 1))  # same size, as the loader checks
    stat = module.stat()
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cache = module.parent / "__pycache__" / f"udf.{sys.implementation.cache_tag}.pyc"
    cache.parent.mkdir()
    py_compile.compile(str(edited), cfile=str(cache), dfile=str(module), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    integrity = Workspace(root, Path(ws)).integrity()
    assert not integrity.intact and integrity.added == [f"original/__pycache__/{cache.name}"]
    # even signed along with the rest, the planted file never runs: the reference is the checked bytes
    Workspace(root, Path(ws)).record_protected()
    outputs = workers.evaluate("reference", Workspace.open_intact(root, ws), "original", [[30, float("nan"), "gold"]]).outputs
    assert outputs == [None]
    ended = _cli(root, ws, "--candidate", "discount_sql")
    assert ended.returncode == 1 and "original/ holds files extraction never writes: original/__pycache__/" in ended.stdout


def test_class_7_copied_verdicts_are_ignored_by_status_and_verify_recomputes_them(verified, workers, tmp_path):
    root, ws = _copy(verified, tmp_path)
    from aether_mcp.tools.cheat_audit import audit_candidate

    # small sizes: this audit only makes a PASS record for verify to distrust
    audit_candidate(root, workers, ws, "discount_sql", hidden_rows_count=1000, watched_rows=(250, 1000))
    shortcut = (EXAMPLES / "loyalty_pricing" / "candidates" / "shortcut_udf.py").read_text()
    files.write_file(root, ws, "candidate/shortcut.py", shortcut)
    runs = Path(ws) / ".aether" / "runs" / "audits.json"
    forged = json.loads(runs.read_text())
    forged["shortcut"] = [{**forged["discount_sql"][-1], "candidate_digest": hashlib.sha256(shortcut.encode()).hexdigest()}]
    runs.write_text(json.dumps(forged))
    status = workspaces.workspace_status(root, ws)
    # the copy keeps discount_sql's signature, which does not cover shortcut's digest: not believed
    assert "shortcut" not in status.last_audits and status.last_audits["discount_sql"].verdict == "PASS"
    assert any("1 audit_candidate record(s) of shortcut ignored" in line for line in status.records_ignored), status.records_ignored
    result = verify(root, workers, ws, "shortcut", **SMALL)
    assert not result.passed and _statuses(result)["candidate"] == "fail"
    assert "row_at_a_time" in result.checks[-1].detail


def test_class_8_cases_cut_and_the_freeze_re_signed_fail_the_gates_verify_measures(verified, workers, tmp_path):
    root, ws = _copy(verified, tmp_path)
    cases = Path(ws) / "tests" / "cases.py"
    cases.write_text(case_file.HEADER + "CASES = []\n")
    case_file.append_cases(cases, read_cases(EXAMPLES / "loyalty_pricing" / "cases.py")[:3])
    opened = Workspace(root, Path(ws))
    (opened.state_dir / frozen_tests.FREEZE_FILE).unlink()
    frozen_tests.freeze(opened)  # re-signed by a shell with the key; no unfreeze is logged
    assert frozen_tests.freeze_record(opened)["cases"] == 3 and not frozen_tests.changed_since_freeze(opened)
    result = verify(root, workers, ws, "discount_sql", **SMALL)
    assert not result.passed
    assert "fail" in (_statuses(result)["coverage"], _statuses(result)["mutation"])


def test_another_state_folder_re_derives_trust_from_the_job_source(verified, tmp_path, monkeypatch):
    root, ws = _copy(verified, tmp_path)
    monkeypatch.setenv("AETHER_MCP_STATE_DIR", str(tmp_path / "another-home"))
    integrity = Workspace(root, Path(ws)).integrity()
    assert integrity.intact and "derived again from jobs/loyalty_pricing/job.py" in integrity.note
    assert Workspace.open_intact(root, ws).integrity().intact and Workspace(root, Path(ws)).integrity().note is None  # re-signed
    assert frozen_tests.freeze_record(Workspace(root, Path(ws)))["cases"] == 26  # the freeze, signed elsewhere, still holds the same files
    # a workspace that does not match its job source is not re-signed under the new key
    monkeypatch.setenv("AETHER_MCP_STATE_DIR", str(tmp_path / "third-home"))
    module = Path(ws) / "original" / "udf.py"
    module.write_text(module.read_text() + "\n")
    integrity = Workspace(root, Path(ws)).integrity()
    assert not integrity.intact and "does not match its job source" in integrity.manifest_problem


def _copy(verified, tmp_path) -> tuple[SandboxRoot, str]:
    """A private copy of the verified root (git history included), so a test can damage it."""
    root, ws = verified
    copy = tmp_path / "root"
    shutil.copytree(root.path, copy, symlinks=True)
    return SandboxRoot(copy), str(copy / Path(ws).relative_to(root.path))


def test_a_local_module_the_reference_drew_from_is_checked_in_git_like_the_job(tmp_path):
    from aether_mcp.verification import _job_source

    shutil.copytree(Path(__file__).parent / "shapes" / "udfs_module", tmp_path / "delivery")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "delivery")
    _git(tmp_path, "commit", "-q", "-m", "the job and its geo module")
    root = SandboxRoot(tmp_path)
    types = {name: "double" for name in ("lat1", "lon1", "lat2", "lon2")}
    ws = workspaces.init_workspace(root, "delivery/job.py", "grid_km_udf", arg_types=types).workspace
    opened = Workspace.open(root, ws)
    assert _job_source(root, opened).status == "pass"
    geo = tmp_path / "delivery" / "geo.py"
    geo.write_text(geo.read_text().replace("111.32", "111.0"))
    check = _job_source(root, opened)
    assert check.status == "fail" and check.detail.startswith("delivery/geo.py has changes git has not committed")
