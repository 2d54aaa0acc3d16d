"""init_workspace and workspace_status: create a conversion workspace for one UDF, and say where it stands."""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Literal, TypeVar

import tomli_w
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.backend import BACKENDS
from aether_mcp.extraction import check as extraction_check
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.spark_types import SUPPORTED_TYPES_TEXT, parse_type, unsupported_part
from aether_mcp.tools import spec_strength
from aether_mcp.workspace import (
    CANDIDATE_DIR,
    CONFIG_FILE,
    ORIGINAL_MODULE,
    TESTS_DIR,
    Workspace,
    WorkspaceConfig,
    candidate_results,
    check_master,
    derivation,
    deviations,
    frozen_tests,
    snapshot_store,
)

DEFAULT_WORKSPACES_DIR = "aether_workspaces"


class UdfArgument(BaseModel):
    name: str
    type: str = Field(description="Spark SQL type of the argument column")
    type_from: Literal["hint", "arg_types"] = Field(description="where the type came from")
    values: list[bool | int | float | str] | None = Field(None, description="the only values the job passes (a literal at every call): hidden, edge and benchmark rows use just these")
    values_from: str | None = Field(None, description="where values came from; init_workspace(whole_domain=[name]) draws the argument over its whole type instead")


class UdfInfo(BaseModel):
    name: str
    function: str = Field(description="the Python function in original/udf.py")
    kind: Literal["row", "pandas"]
    form: str = Field(description="how the source defines the UDF")
    args: list[UdfArgument]
    return_type: str
    source: str
    source_line: int
    use_arrow: bool | None = Field(
        None,
        description="Python UDF transport in the job: true Arrow, false pickled rows, null decided by the session's "
        "spark.sql.execution.pythonUDF.arrow.enabled (it changes what the UDF receives and how its result is converted)",
    )


class InitWorkspaceResult(BaseModel):
    workspace: str = Field(description="absolute path of the new workspace; pass it to every other tool")
    udf: UdfInfo
    original: str = Field(description="the extracted reference module, relative to the workspace")
    spark_conf: dict[str, str]
    files: list[str] = Field(description="the workspace's files (the first 100 in path order)")
    files_left_out: int = Field(0, description="files not listed to keep the result small; list_files pages them all")
    snapshot_id: int
    notes: list[str] = Field(default_factory=list, description="what the extraction kept that the job itself leaves undefined, and similar facts to know before writing cases")
    next_steps: list[str]


def init_workspace(
    root: SandboxRoot,
    source: str,
    udf: str,
    arg_types: dict[str, str] | None = None,
    workspace: str | None = None,
    return_type: str | None = None,
    benchmark_master: str | None = None,
    backend: str = "auto",
    whole_domain: list[str] | None = None,
) -> InitWorkspaceResult:
    """Extract UDF `udf` from `source` into a new workspace, freeze its config and take snapshot 0."""
    if backend not in BACKENDS:
        raise ToolError(f"backend must be one of {', '.join(BACKENDS)} (got {backend!r}); nothing was created.")
    if benchmark_master is not None:
        try:
            check_master(benchmark_master, "benchmark_master")
        except ValueError as exc:
            raise ToolError(f"{exc}; nothing was created.") from exc
    derived = derivation.derive(root, source, udf, arg_types, return_type, benchmark_master, backend, whole_domain)
    config = derived.config
    refuse_unsupported_types(config)

    target = root.resolve(workspace or f"{DEFAULT_WORKSPACES_DIR}/{config.udf.name}", what="workspace")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ToolError(
            f"workspace {root.relative(target)} already exists and is not empty; nothing was changed. "
            "Pass workspace= a new folder, or call workspace_status on the existing one."
        )
    if target == root.path:
        raise ToolError("workspace cannot be the server root itself; pass workspace= a new sub-folder.")
    created_dir = not target.exists()
    try:
        target.mkdir(parents=True, exist_ok=True)
        _write_workspace(target, config, derived.module_source)
        opened = Workspace(root, target)
        opened.record_protected()
        notes = extraction_check.check(opened, derived.extracted, derived.source_path, config.udf.source) if derived.extracted is not None else []
        notes += _hint_notes(config)
        with opened.lock():
            snapshot = snapshot_store.take(opened, "init: empty tests, no candidates")
    except BaseException:
        # A half-made workspace is worse than none; only what this call created is removed.
        if created_dir:
            shutil.rmtree(target, ignore_errors=True)
        else:
            for child in target.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    files, files_left_out = paging.fit(sorted(rel for rel in [*opened.protected_files(), *opened.editable_files()]))
    return InitWorkspaceResult(
        workspace=str(target),
        udf=_udf_info(config),
        original=ORIGINAL_MODULE,
        spark_conf=config.spark.conf,
        files=files,
        files_left_out=files_left_out,
        snapshot_id=snapshot.snapshot_id,
        notes=notes,
        next_steps=[
            "read original/udf.py (read_file) to see the UDF exactly as extracted",
            "record_cases(workspace, inputs, why): typical rows, every branch, boundaries, nulls; the original's real outputs go into tests/cases.py",
            "run_tests(workspace, 'original') to check the cases against the original through Spark",
            "coverage_report, mutation_score and audit_tests, then freeze_tests (the specify prompt walks through phase 1)",
        ],
    )


def refuse_unsupported_types(config: WorkspaceConfig) -> None:
    """Refuse, before anything is created, a type the tools cannot generate, convert or compare yet."""
    typed = [(f"argument {arg.name!r} is {arg.type}", arg.type) for arg in config.udf.args] + [(f"the UDF returns {config.udf.return_type}", config.udf.return_type)]
    for where, text in typed:
        part = unsupported_part(parse_type(text))
        if part:
            raise ToolError(
                f"UDF {config.udf.name!r} uses {part}, which aether-mcp does not support yet ({where}); supported: {SUPPORTED_TYPES_TEXT}. "
                "Nothing was created. If the job's column has another type, pass it in arg_types or return_type."
            )


class Gate(BaseModel):
    name: str
    status: Literal["pass", "fail", "pending"]
    detail: str


class IntegrityStatus(BaseModel):
    intact: bool
    modified: list[str]
    missing: list[str]
    added: list[str]
    left_out: int = Field(0, description="paths left out of modified, missing and added to keep the result small")
    problem: str | None = None
    recover: str | None = None
    note: str | None = Field(None, description="e.g. re-signed under this server's key after the workspace was derived again from its job source")


class FileEntry(BaseModel):
    path: str
    protected: bool
    size: int


class RunSummary(BaseModel):
    run_id: str
    passed: int
    failed: int
    errors: int
    skipped: int
    timed_out: bool
    tests_changed_since: bool = Field(description="the test files changed after this run")


class CompareSummary(BaseModel):
    equal: bool | None = Field(description="null: no verdict, too few rows on which the original returned")
    evidence: str = ""
    rows_compared: int
    mismatched: int
    candidate_changed_since: bool = Field(description="stale: the candidate, the original or the deviations differ from every comparison recorded; the newest is shown")
    result_path: str
    backend: str = Field("cpu", description="where the candidate ran: cpu or gpu")
    simulated: bool = Field(False, description="a kernel under numba's CUDA simulator")
    gpu_verified: bool = Field(False, description="device counters showed the work on the GPU")
    confined: bool = Field(False, description="the candidate ran in confined processes")


T = TypeVar("T")


class AuditSummary(BaseModel):
    verdict: str
    blocking: int = Field(description="blocking findings")
    candidate_changed_since: bool = Field(description="stale: the candidate, the original or the deviations differ from every audit recorded; the newest is shown")
    result_path: str


class FreezeStatus(BaseModel):
    frozen: bool
    since: str | None = None
    cases: int | None = None
    changed_since_freeze: list[str] = Field(default_factory=list, description="test files changed since the freeze (the first ones when many)")
    problem: str | None = None
    log: list[dict] = Field(default_factory=list, description="the freezes and unfreezes, with unfreeze reasons (the newest when many; long lists in an entry described)")


class WorkspaceStatusResult(BaseModel):
    workspace: str
    udf: UdfInfo
    integrity: IntegrityStatus
    files: list[FileEntry] = Field(description="the workspace's files, protected first (the first 100, fewer when their paths are long)")
    files_left_out: int = Field(description="files not listed to keep the result small; list_files pages them all")
    test_files: list[str] = Field(description="tests/test_*.py files (the first 100)")
    test_files_left_out: int = Field(description="test files not listed")
    cases: int | None = Field(description="entries in tests/cases.py CASES, when it is a literal list")
    candidates: list[str] = Field(description="candidate names (the first 100)")
    candidates_left_out: int = Field(description="candidates not listed")
    snapshots: int
    last_runs: dict[str, RunSummary]
    last_compares: dict[str, CompareSummary] = Field(description="per candidate, the strongest byte_compare of its current content (a mismatch outweighs later equal runs), else the latest")
    last_audits: dict[str, AuditSummary] = Field(description="per candidate, the strongest audit_candidate of its current content (a failure with findings outweighs later passes), else the latest")
    deviations: dict[str, list[str]] = Field(description="recorded deviations per candidate (or why they cannot be read); the first candidates when many, each text clipped")
    justifications: dict[str, str] = Field(description="why uncovered lines or branches and surviving mutants are acceptable (the first ones when many, each clipped)")
    freeze: FreezeStatus
    gates: list[Gate]
    records_ignored: list[str] = Field(default_factory=list, description="byte_compare and audit_candidate records skipped because this server's signature over them is missing or wrong (edited by hand, or written under another key)")


def workspace_status(root: SandboxRoot, workspace: str) -> WorkspaceStatusResult:
    """Files, protected-file integrity, last test runs and the phase gates so far; works on tampered workspaces too."""
    opened = Workspace.open(root, workspace)
    integrity = opened.integrity()
    editable = opened.editable_files()
    protected = opened.protected_files()
    files = [FileEntry(path=rel, protected=True, size=p.stat().st_size) for rel, p in protected.items()]
    files += [FileEntry(path=rel, protected=False, size=p.stat().st_size) for rel, p in editable.items()]
    test_files = sorted(rel for rel in editable if rel.startswith(f"{TESTS_DIR}/") and Path(rel).name.startswith("test_"))
    cases = count_cases(opened.path / TESTS_DIR / "cases.py")
    candidates = sorted(Path(rel).stem for rel in editable if rel.startswith(f"{CANDIDATE_DIR}/") and rel.endswith(".py") and rel.count("/") == 1)
    digest = tests_digest(opened)
    last_runs = {
        target: RunSummary.model_validate({**run, "tests_changed_since": run.get("tests_digest") != digest})
        for target, run in _latest_runs(opened).items()
    }
    recover = None
    if not integrity.intact:
        recover = (
            "restore the recorded files from .aether/protected/ (e.g. `cp .aether/protected/original/udf.py original/udf.py`), "
            "delete added files under original/, or create a fresh workspace with init_workspace"
        )
    last_compares = _latest_compares(opened, editable)
    freeze = _freeze_status(opened)
    gates = _gates(integrity.intact, test_files, cases, last_runs.get("original"))
    for name, key, call in (("branch_coverage", "coverage", "coverage_report"), ("mutation_score", "mutation", "mutation_score")):
        measured = spec_strength.spec_gates(opened)[key]
        if measured is None:
            gates.append(Gate(name=name, status="pending", detail=f"call {call}(workspace) on the current original and cases"))
        else:
            gates.append(Gate(name=name, status=measured.status, detail=measured.detail))
    gates.append(Gate(name="tests_frozen", status="pass" if freeze.frozen and not freeze.changed_since_freeze else ("fail" if freeze.frozen or freeze.problem else "pending"), detail=_freeze_detail(freeze)))
    gates.append(_compare_gate(last_compares))
    last_audits = _latest_audits(opened, editable)
    gates.append(_audit_gate(last_audits))
    shown_files, files_left_out = paging.fit(files)
    shown_tests, test_files_left_out = paging.fit(test_files, budget=paging.LIST_BYTES // 4)
    shown_candidates, candidates_left_out = paging.fit(candidates, budget=paging.LIST_BYTES // 4)
    return WorkspaceStatusResult(
        workspace=str(opened.path),
        udf=_udf_info(opened.config),
        integrity=IntegrityStatus(
            intact=integrity.intact,
            modified=paging.fit(integrity.modified, budget=paging.LIST_BYTES // 4)[0],
            missing=paging.fit(integrity.missing, budget=paging.LIST_BYTES // 4)[0],
            added=paging.fit(integrity.added, budget=paging.LIST_BYTES // 4)[0],
            left_out=sum(paging.fit(names, budget=paging.LIST_BYTES // 4)[1] for names in (integrity.modified, integrity.missing, integrity.added)),
            problem=integrity.manifest_problem,
            recover=recover,
            note=integrity.note,
        ),
        files=shown_files,
        files_left_out=files_left_out,
        test_files=shown_tests,
        test_files_left_out=test_files_left_out,
        cases=cases,
        candidates=shown_candidates,
        candidates_left_out=candidates_left_out,
        snapshots=len(snapshot_store.all_snapshots(opened)),
        last_runs=last_runs,
        last_compares=paging.fit_dict(last_compares, budget=paging.LIST_BYTES // 2)[0],
        last_audits=paging.fit_dict(last_audits, budget=paging.LIST_BYTES // 2)[0],
        deviations=paging.fit_dict(_deviations(opened, candidates))[0],
        justifications=paging.fit_dict(spec_strength.justifications(opened))[0],
        freeze=freeze.model_copy(
            update={
                "changed_since_freeze": paging.fit(freeze.changed_since_freeze, budget=paging.LIST_BYTES // 2)[0],
                "log": paging.fit([paging.abridged(entry) for entry in reversed(freeze.log)], budget=paging.LIST_BYTES)[0][::-1],
            }
        ),
        gates=gates,
        records_ignored=_ignored_records(opened),
    )


def _ignored_records(workspace: Workspace) -> list[str]:
    found = []
    for kind, tool in (("compares", "byte_compare"), ("audits", "audit_candidate")):
        for name in candidate_results.candidates(workspace, kind):
            count = candidate_results.ignored(workspace, kind, name)
            if count:
                found.append(f"{count} {tool} record(s) of {name} ignored: not signed by this server; run {tool}(workspace, {name!r}) again")
    return found


def count_cases(path: Path) -> int | None:
    """How many entries `CASES` has, read statically (agent code is never imported by the server)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "CASES" for t in statement.targets)
            and isinstance(statement.value, (ast.List, ast.Tuple))
        ):
            return len(statement.value.elts)
    return None


def tests_digest(workspace: Workspace) -> str:
    """One hash over every file under tests/: a run is current only while this is unchanged."""
    files = snapshot_store.current_files(workspace)
    return json.dumps(sorted((rel, digest) for rel, digest in files.items() if rel.startswith(f"{TESTS_DIR}/")))


def latest_runs_path(workspace: Workspace) -> Path:
    return workspace.state_dir / "runs" / "latest.json"


def _latest_runs(workspace: Workspace) -> dict[str, dict]:
    try:
        data = json.loads(latest_runs_path(workspace).read_text())
        return {str(k): dict(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _latest_compares(workspace: Workspace, editable: dict[str, Path]) -> dict[str, CompareSummary]:
    return _latest(workspace, editable, "compares.json", lambda entry, changed: CompareSummary(
        equal=entry["equal"] if entry["equal"] is None else bool(entry["equal"]),
        evidence=str(entry.get("evidence", "")),
        rows_compared=int(entry["rows_compared"]),
        mismatched=int(entry["mismatched"]),
        candidate_changed_since=changed,
        result_path=str(entry["result_path"]),
        backend=str(entry.get("backend", "cpu")),
        simulated=bool(entry.get("simulated", False)),
        gpu_verified=bool(entry.get("gpu_verified", False)),
        confined=bool(entry.get("confined", False)),
    ))


def _latest_audits(workspace: Workspace, editable: dict[str, Path]) -> dict[str, AuditSummary]:
    return _latest(workspace, editable, "audits.json", lambda entry, changed: AuditSummary(
        verdict=str(entry["verdict"]),
        blocking=int(entry["blocking"]),
        candidate_changed_since=changed,
        result_path=str(entry["result_path"]),
        backend=str(entry.get("backend", "cpu")),
        simulated=bool(entry.get("simulated", False)),
        gpu_verified=bool(entry.get("gpu_verified", False)),
    ))


def _latest(workspace: Workspace, editable: dict[str, Path], filename: str, summary: Callable[[dict, bool], T]) -> dict[str, T]:
    """Per candidate, the strongest result on its current files, else its latest result marked stale."""
    kind = "compares" if filename == "compares.json" else "audits"
    summaries = {}
    for name in candidate_results.candidates(workspace, kind):
        entry, stale = candidate_results.shown(workspace, kind, name)
        if entry is None:
            continue
        try:
            summaries[name] = summary(entry, stale)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return summaries


def _audit_gate(audits: dict[str, AuditSummary]) -> Gate:
    current = {name: a for name, a in audits.items() if not a.candidate_changed_since}
    clean = sorted(name for name, a in current.items() if a.verdict.startswith("PASS"))
    if clean:
        return Gate(name="candidate_audited", status="pass", detail=f"audit_candidate passed: {', '.join(clean)}")
    if current:
        return Gate(name="candidate_audited", status="fail", detail=f"audit_candidate failed: {', '.join(sorted(current))}; see last_audits")
    return Gate(name="candidate_audited", status="pending", detail="call audit_candidate(workspace, candidate) once byte_compare finds no difference")


def _deviations(workspace: Workspace, candidates: list[str]) -> dict[str, list[str]]:
    found = {}
    for name in candidates:
        try:
            recorded = deviations.load(workspace, name)
        except ToolError as exc:
            found[name] = [f"unreadable: {exc}"]
            continue
        if recorded:
            found[name] = [d.describe() for d in recorded]
    return found


def _freeze_status(workspace: Workspace) -> FreezeStatus:
    log = frozen_tests.freeze_log(workspace)
    try:
        record = frozen_tests.freeze_record(workspace)
        changed = frozen_tests.changed_since_freeze(workspace)
    except ToolError as exc:
        return FreezeStatus(frozen=False, problem=str(exc), log=log)
    if record is None:
        return FreezeStatus(frozen=False, log=log)
    return FreezeStatus(frozen=True, since=record["time"], cases=record["cases"], changed_since_freeze=changed, log=log)


def _freeze_detail(freeze: FreezeStatus) -> str:
    if freeze.problem:
        return freeze.problem
    if not freeze.frozen:
        return "call freeze_tests(workspace) once the tests, coverage and mutation gates hold"
    if freeze.changed_since_freeze:
        return f"frozen tests changed: {', '.join(freeze.changed_since_freeze)}; revert them or unfreeze_tests(workspace, reason)"
    return f"frozen since {freeze.since} with {freeze.cases} cases"


def _compare_gate(compares: dict[str, CompareSummary]) -> Gate:
    current = {name: c for name, c in compares.items() if not c.candidate_changed_since}
    equal = sorted(name for name, c in current.items() if c.equal)
    if equal:
        return Gate(name="candidate_equal", status="pass", detail=f"byte_compare found no difference for: {', '.join(equal)}")
    undecided = sorted(name for name, c in current.items() if c.equal is None)
    if undecided and len(undecided) == len(current):
        return Gate(name="candidate_equal", status="fail", detail=f"byte_compare gave no verdict for: {', '.join(undecided)} ({current[undecided[0]].evidence})")
    if current:
        return Gate(name="candidate_equal", status="fail", detail=f"byte_compare found differences for: {', '.join(sorted(current))}")
    return Gate(name="candidate_equal", status="pending", detail="call byte_compare(workspace, candidate) once a candidate passes run_tests")


def _gates(intact: bool, test_files: list[str], cases: int | None, original_run: RunSummary | None) -> list[Gate]:
    gates = [Gate(name="protected_files_intact", status="pass" if intact else "fail", detail="aether.toml and original/ match their recorded hashes" if intact else "protected files changed; see integrity")]
    has_tests = bool(test_files) and (cases is None or cases > 0 or len(test_files) > 1)
    gates.append(
        Gate(
            name="tests_written",
            status="pass" if has_tests else "pending",
            detail=f"{len(test_files)} test file(s), {cases if cases is not None else 'unknown number of'} case(s) in tests/cases.py"
            if has_tests
            else "add cases to tests/cases.py (and tests/test_*.py files if needed)",
        )
    )
    if original_run is None:
        gates.append(Gate(name="tests_pass_on_original", status="pending", detail="call run_tests(workspace, 'original')"))
    elif original_run.tests_changed_since:
        gates.append(Gate(name="tests_pass_on_original", status="pending", detail="tests changed since the last run; run them again on 'original'"))
    else:
        ok = original_run.failed == 0 and original_run.errors == 0 and not original_run.timed_out and original_run.passed > 0
        gates.append(
            Gate(
                name="tests_pass_on_original",
                status="pass" if ok else "fail",
                detail=f"run {original_run.run_id}: {original_run.passed} passed, {original_run.failed} failed, {original_run.errors} errors",
            )
        )
    return gates


def _hint_notes(config: WorkspaceConfig) -> list[str]:
    """Types read from Python hints are a guess: Spark ignores hints and feeds the UDF whatever column the job passes."""
    hinted = [a for a in config.udf.args if a.type_from == "hint"]
    if not hinted:
        return []
    listed = ", ".join(f"{a.name} ({a.type})" for a in hinted)
    example = ", ".join(f'"{a.name}": "{a.type}"' for a in hinted)
    return [
        f"argument types from Python hints: {listed}. Spark ignores hints; the job's column types rule (a float hint on a bigint "
        f"column gives the UDF ints). If a column has another type, init_workspace again with arg_types={{{example}}} corrected."
    ]


def _udf_info(config: WorkspaceConfig) -> UdfInfo:
    udf = config.udf
    return UdfInfo(
        name=udf.name,
        function=udf.function,
        kind=udf.kind,
        form=udf.form,
        args=[UdfArgument(name=a.name, type=a.type, type_from=a.type_from, values=a.values, values_from=a.values_from) for a in udf.args],
        return_type=udf.return_type,
        source=udf.source,
        source_line=udf.source_line,
        use_arrow=udf.use_arrow,
    )


AGGREGATION_NOTE = """
**`{name}` is an aggregation** (Series to one value, once per group of `groupBy(...).agg()`). A row
of the cases is one group: each argument holds that group's values of its column. A `sql`
candidate's `build(*cols)` returns one aggregate Column over the columns (`F.max(c) - F.min(c)`),
never steps; a `vectorized` candidate's `evaluate(*series)` gets one group's columns and returns
one value (a Python or NumPy scalar; None for null).
"""


def _write_workspace(target: Path, config: WorkspaceConfig, module_source: str) -> None:
    (target / "original").mkdir()
    (target / ORIGINAL_MODULE).write_text(module_source, encoding="utf-8")
    (target / CONFIG_FILE).write_text(_toml(config), encoding="utf-8")
    arg_names = [a.name for a in config.udf.args]
    replacements = {
        "{{udf_name}}": config.udf.name,
        "{{signature}}": ", ".join(arg_names),
        "{{first_arg}}": arg_names[0],
        "{{numpy_args}}": ", ".join(f"{n}.to_numpy(dtype=\"float64\", na_value=np.nan)" for n in arg_names),
        "{{arg_list}}": ", ".join(f"`{a.name}` ({a.type})" for a in config.udf.args),
        "{{return_type}}": config.udf.return_type,
        "{{kind}}": config.udf.kind,
        "{{source}}": config.udf.source,
        "{{form_note}}": AGGREGATION_NOTE.format(name=config.udf.name) if config.udf.pandas_form == "aggregate" else "",
    }
    template = resources.files("aether_mcp") / "project_template"
    for relative in ("README.md", "tests/cases.py", "tests/test_behaviour.py", "candidate/README.md"):
        text = (template / relative).read_text(encoding="utf-8")
        for token, value in replacements.items():
            text = text.replace(token, value)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text, encoding="utf-8")


def _toml(config: WorkspaceConfig) -> str:
    header = "# Frozen by init_workspace: the UDF's contract and the Spark settings it is judged under. Do not edit.\n"
    return header + tomli_w.dumps(config.model_dump(exclude_none=True))


def open_named(root: SandboxRoot, name: str) -> Workspace:
    """The workspace aether_workspaces/<name>, else <name> under the server root."""
    candidates = [f"{DEFAULT_WORKSPACES_DIR}/{name}", name]
    for candidate in candidates:
        try:
            path = root.resolve(candidate, what="workspace")
        except ToolError:
            continue
        if (path / CONFIG_FILE).is_file():
            return Workspace.open_intact(root, candidate)
    raise ToolError(f"no workspace named {name!r}: looked for {' and '.join(candidates)} under the server root. Use the folder name init_workspace created.")
