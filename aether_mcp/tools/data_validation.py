"""validate_on_data: the original and a candidate over the user's own data, compared inside Spark.

Three Spark applications, one after the other, never one holding both the original and the
candidate (aether_mcp.reference.validation_app, aether_mcp.confined.validation_app):

1. trusted: read the data, cast the argument columns to the declared types, number the rows,
   write them as `inputs/`;
2. confined: read `inputs/` only, run the candidate as a job wires it, write its outputs;
3. trusted, once the candidate's application has ended: run the original over `inputs/`, write
   its outputs (and the rows it raised on), join the three on the row id and count mismatches
   by kind in Spark; collect only the counts and up to 20 mismatching rows.

Everything lands under `.aether/validate/<run>/`, with a result JSON the result links.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.backend import CPU
from aether_mcp.evaluation.spark_session import COMPILER_NOTE, timed_quick_jit
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import confined_child, confinement, subprocess_runner
from aether_mcp.progress_report import ChildProgress
from aether_mcp.tools.cheat_audit import passed_here_for
from aether_mcp.workspace import Workspace, candidate_results, check_master, deviations, new_run_id
from aether_mcp.workspace.candidates import BadCandidate, candidate_path, check_target, declared_target

VALIDATE_DIR = "validate"
FORMATS = ("parquet", "csv", "json", "orc")
EXTENSIONS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".orc": "orc"}
SAMPLES = 20
SAMPLE_FIELDS = frozenset({"args", "original", "candidate"})  # clipped in the result, whole in the record
DEFAULT_TIMEOUT_S = 900
Progress = Callable[[int, int | None, str], None]
# steps each application reports: the inputs' (2), the candidate's (3), the original's and the comparison's (4)
STEPS = (2, 3, 4)


class SideRun(BaseModel):
    seconds: float = Field(description="seconds of the job that ran it over the rows and wrote its outputs, as its application timed it")
    application_s: float = Field(description="wall seconds of the application that ran it (Spark start included; the original's also compares), timed by the server")
    raised_rows: int = Field(description="rows it raised on")
    timed: str = Field(description="which rows the seconds cover")


class Mismatch(BaseModel):
    row_id: int
    kind: str
    args: list[str] = Field(description="argument values (Python repr: 'nan', '-0.0' are exact)")
    original: str = Field(description="what the original returned (repr), or 'raised Type: message'")
    candidate: str = Field(description="what the candidate returned (repr), 'raised ...', or 'missing: ...'")


class ValidateOnDataResult(BaseModel):
    workspace: str
    candidate: str
    data: str
    format: str
    master: str
    verdict: str = Field(description="equal, mismatch, or 'too little evidence: ...' (fewer rows compared than [compare] min_compared_rows)")
    equal: bool | None = Field(description="true only with enough rows compared and no mismatch; null with too little evidence")
    rows: int = Field(description="rows read (after limit)")
    rows_compared: int = Field(description="rows on which the original returned a value")
    original_raised: int = Field(description="rows on which the original raised (the job as written would fail on them)")
    mismatches: int = Field(description="rows in any mismatch kind, plus extra and duplicate rows")
    counts: dict[str, int] = Field(description="rows by mismatch kind")
    extra_rows: int = Field(description="rows the candidate wrote for row ids that do not exist")
    duplicate_rows: int = Field(description="rows the candidate wrote twice or more for one row id (beyond the first)")
    within_tolerance: int = Field(0, description="float rows equal only within the ULP tolerance applied")
    allowed_returns: int = Field(0, description="rows where the original raised and the candidate returned, allowed by a recorded deviation")
    samples: list[Mismatch] = Field(description=f"up to {SAMPLES} mismatching rows")
    casts: list[dict[str, str]] = Field(description="data columns cast to the argument's declared type")
    deviations_applied: list[str]
    deviations_not_applied: list[str] = Field(description="recorded deviations with applies_to predicates: not applied here, so rows they cover count as mismatches")
    original: SideRun
    candidate_run: SideRun
    speedup: float | None = Field(description="original seconds / candidate seconds over the same rows; null where either raised on some rows")
    jvm_compiler: str | None = Field(None, description=COMPILER_NOTE)
    confined: bool
    confinement: str
    result_path: str
    duration_s: float


def validate_on_data(
    root: SandboxRoot,
    workspace: str,
    candidate: str,
    data: str,
    columns: list[str] | None = None,
    format: str | None = None,
    master: str | None = None,
    limit: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> ValidateOnDataResult:
    started = time.monotonic()
    report = progress or (lambda done, total, message: None)
    opened = Workspace.open_intact(root, workspace)
    target = check_target(opened, candidate if candidate.startswith("candidate:") else f"candidate:{candidate}")
    name = target.removeprefix("candidate:")
    try:
        declared_target(candidate_path(opened, target).read_text(encoding="utf-8"), name)
    except BadCandidate as exc:
        raise ToolError(f"{exc}; fix the candidate (run_tests shows the same problem) and validate again.") from None
    if opened.config.udf.pandas_form == "aggregate":
        raise ToolError("validate_on_data compares one output per row; this UDF is an aggregation (one output per group). Use byte_compare and run_benchmark for it.")
    arity = len(opened.config.udf.args)
    if columns is not None and len(columns) != arity:
        raise ToolError(f"columns names one data column per argument, in order: the UDF takes {arity} ({[a.name for a in opened.config.udf.args]}), {len(columns)} were given.")
    location, fmt = _data_location(root, data, format)
    chosen_master = _master(opened, master)
    pinned = passed_here_for(opened, name, chosen_master, "validate_on_data")
    run_id = new_run_id()
    folder = opened.state_dir / VALIDATE_DIR / run_id
    folder.mkdir(parents=True)
    applied, not_applied, tolerance, allowed = _deviations(opened, name)
    # what this run judges (candidate, original, deviations), so the report can tell it from a run on other files
    judged = candidate_results.state_digests(opened, name)
    base = {"config": opened.config.model_dump(mode="json"), "master": chosen_master, "folder": str(folder), "quick_jit": timed_quick_jit(chosen_master)}
    deadline = time.monotonic() + timeout_s
    offset = [0]
    total = sum(STEPS)

    def forward(step: dict[str, Any]) -> None:
        report(min(total, offset[0] + int(step["done"])), total, str(step["message"]))

    # 1. the inputs, trusted
    inputs = _trusted(opened, folder, "inputs", {**base, "phase": "inputs", "data": {"path": location, "format": fmt, "columns": columns}, "limit": limit}, deadline, cancel, forward)
    offset[0] += STEPS[0]
    # 2. the candidate, confined, reading only the numbered inputs
    candidate_raw, candidate_s, status, digest = _confined(opened, folder, target, {**base, "inputs": str(folder / "inputs")}, deadline, cancel, forward, pinned)
    if digest != judged["candidate_digest"]:
        raise ToolError(f"candidate {name!r} changed while validate_on_data ran; nothing is recorded. Validate again once it is written.")
    offset[0] += STEPS[1]
    # 3. the original and the comparison, trusted, once no candidate code runs
    source = {"source": opened.verified_original(), "filename": str(opened.path / "original" / "udf.py")}
    compared = _trusted(
        opened,
        folder,
        "compare",
        {**base, "phase": "compare", "original": source, "ulp_tolerance": tolerance, "returns_where_original_raises": allowed, "samples": SAMPLES},
        deadline,
        cancel,
        forward,
    )
    original = {**compared["original"], "application_s": compared["application_s"]}
    if "type_mismatch" in compared:
        raise ToolError(f"{compared['type_mismatch']}: the outputs cannot be compared; run_tests and byte_compare show the same (log: {folder}).")
    counts = compared["counts"]
    mismatches = sum(counts.values()) + compared["extra_rows"] + compared["duplicate_rows"]
    rows_compared = compared["rows"] - compared["original_raised"]
    required = opened.config.compare.min_compared_rows
    if mismatches:
        verdict, equal = "mismatch", False
    elif rows_compared < required:
        verdict = (
            f"too little evidence: {rows_compared} rows compared where equal needs {required}; pass a larger limit or more data "
            "(lower aether.toml [compare] min_compared_rows only if the job's real input is this small)"
        )
        equal = None
    else:
        verdict, equal = "equal", True
    both_clean = original["raised_rows"] == 0 and candidate_raw["raised_rows"] == 0
    speedup = round(original["seconds"] / candidate_raw["seconds"], 3) if both_clean and candidate_raw["seconds"] > 0 else None
    result = ValidateOnDataResult(
        workspace=str(opened.path),
        candidate=name,
        data=location,
        format=fmt,
        master=chosen_master,
        verdict=verdict,
        equal=equal,
        rows=compared["rows"],
        rows_compared=rows_compared,
        original_raised=compared["original_raised"],
        mismatches=mismatches,
        counts=counts,
        extra_rows=compared["extra_rows"],
        duplicate_rows=compared["duplicate_rows"],
        within_tolerance=compared["within_tolerance"],
        allowed_returns=compared["allowed_returns"],
        samples=[Mismatch(**paging.clip_fields(s, SAMPLE_FIELDS)) for s in compared["samples"]],  # the record keeps them whole
        casts=inputs["casts"],
        deviations_applied=applied,
        deviations_not_applied=not_applied,
        original=SideRun(seconds=original["seconds"], application_s=original["application_s"], raised_rows=original["raised_rows"], timed=original["timed"]),
        candidate_run=SideRun(seconds=candidate_raw["seconds"], application_s=candidate_s, raised_rows=candidate_raw["raised_rows"], timed=candidate_raw["timed"]),
        speedup=speedup,
        jvm_compiler=compared.get("jvm_compiler"),
        confined=status.confined,
        confinement=status.how + _executors_note(chosen_master),
        result_path=str(folder / "result.json"),
        duration_s=round(time.monotonic() - started, 3),
    )
    (folder / "result.json").write_text(json.dumps({**result.model_dump(mode="json"), **judged}, indent=2), encoding="utf-8")
    report(total, total, f"{verdict.split(':')[0]}: {rows_compared} rows compared, {mismatches} mismatching")
    return result


def _data_location(root: SandboxRoot, data: str, format: str | None) -> tuple[str, str]:
    """(where Spark reads the data, its format): a path inside the root, or a URI the master can read."""
    if not isinstance(data, str) or not data.strip():
        raise ToolError("data is empty; give a path inside the root (a Parquet, CSV, JSON or ORC file or folder) or a URI such as s3a://bucket/table.")
    if format is not None and format not in FORMATS:
        raise ToolError(f"format {format!r} is not one of {', '.join(FORMATS)}.")
    scheme = data.split("://", 1)[0].lower() if "://" in data else ""
    if scheme and scheme != "file":
        fmt = format or EXTENSIONS.get(Path(data.rstrip("/")).suffix.lower())
        if fmt is None:
            raise ToolError(f"cannot tell the format of {data} from its name; pass format= one of {', '.join(FORMATS)}.")
        return data, fmt
    path = root.resolve(data.removeprefix("file://"), what="data")
    if not path.exists():
        raise ToolError(f"data {data!r} does not exist under the root; give a file or folder of Parquet, CSV, JSON or ORC inside it.")
    fmt = format or _format_of(path)
    if fmt is None:
        raise ToolError(f"cannot tell the format of {data}: no .parquet, .csv, .json or .orc file there; pass format= one of {', '.join(FORMATS)}.")
    return str(path), fmt


def _format_of(path: Path) -> str | None:
    if path.is_file():
        return EXTENSIONS.get(path.suffix.lower())
    found = {EXTENSIONS[f.suffix.lower()] for f in path.rglob("*") if f.is_file() and f.suffix.lower() in EXTENSIONS}
    return found.pop() if len(found) == 1 else None


def _master(opened: Workspace, master: str | None) -> str:
    if master is None:
        return opened.config.benchmark.master or opened.config.spark.master
    try:
        return check_master(master, "master")
    except ValueError as exc:
        raise ToolError(f"{exc}; or leave it out to use aether.toml's [benchmark] master (default local[*]).") from None


def _deviations(opened: Workspace, name: str) -> tuple[list[str], list[str], int, bool]:
    """(applied, not applied, ULP tolerance, whether returning where the original raises is allowed everywhere)."""
    applied, not_applied = [], []
    tolerance = opened.config.compare.ulp_tolerance if opened.config.compare.floats == "ulp" else 0
    if tolerance:
        applied.append(f"aether.toml: floats within {tolerance} ULP count as equal")
    allowed = False
    for deviation in deviations.load(opened, name):
        if deviation.applies_to:
            not_applied.append(deviation.describe())
        elif deviation.returns_where_original_raises:
            allowed = True
            applied.append(deviation.describe())
        elif deviation.ulp_tolerance:
            tolerance = max(tolerance, deviation.ulp_tolerance)
            applied.append(deviation.describe())
    return applied, not_applied, tolerance, allowed


def _executors_note(master: str) -> str:
    if master.startswith("local"):
        return ""
    return f"; on {master} the executors' Python workers run where the cluster starts them, outside this confinement"


def _trusted(opened: Workspace, folder: Path, phase: str, request: dict[str, Any], deadline: float, cancel: threading.Event | None, forward: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run the trusted application for `phase` (it loads only the original, from verified bytes); its result."""
    with confinement.Scratch("validate") as scratch:
        request = {**request, "result": str(scratch.path / "result.json"), "progress": str(scratch.path / "progress.jsonl"), "scratch": str(scratch.path)}
        (scratch.path / "request.json").write_text(json.dumps(request), encoding="utf-8")
        poll = ChildProgress(forward)
        ended = subprocess_runner.run(
            [sys.executable, "-I", "-B", "-m", "aether_mcp.reference.validation_app", str(scratch.path / "request.json")],
            cwd=scratch.path,
            log_path=folder / f"{phase}.log",
            timeout_s=max(1.0, deadline - time.monotonic()),
            env_extra={"SPARK_LOCAL_IP": "127.0.0.1", "PYARROW_IGNORE_TIMEZONE": "1", "TZ": opened.config.spark.conf.get("spark.sql.session.timeZone", "UTC")},
            cancel=cancel,
            on_poll=lambda: poll(scratch.path / "progress.jsonl"),
        )
        poll(scratch.path / "progress.jsonl")
        raw = _read(scratch.path / "result.json")
    what = "the Spark application that reads the data" if phase == "inputs" else "the Spark application that runs the original and compares"
    _check_ended(ended, what, raw)
    if raw.get("error"):
        raise ToolError(f"validate_on_data stopped in {what}: {raw['error']} (log: {folder / f'{phase}.log'})")
    return {**raw, "application_s": ended.duration_s}


def _confined(
    opened: Workspace, folder: Path, target: str, request: dict[str, Any], deadline: float, cancel: threading.Event | None, forward: Callable[[dict[str, Any]], None], pinned: str | None
):
    from aether_mcp.confined.validation_app import OUTPUT_FOLDER

    try:
        given = confined_child.sources(opened, target, pinned=pinned)
    except confined_child.ChangedSinceAudit as exc:
        raise ToolError(f"{exc}; nothing ran on {request['master']}. Audit the new bytes (audit_candidate), then validate again.") from None
    request = {
        **request,
        **given,
        "conf": {"spark.python.use.daemon": "true", "spark.python.daemon.module": "aether_mcp.confined.python_daemon"},
    }
    child = confined_child.run(
        opened,
        "aether_mcp.confined.validation_app",
        request,
        folder=folder,
        result_name="candidate.json",
        timeout_s=max(1.0, deadline - time.monotonic()),
        cancel=cancel,
        read=[request["inputs"]],
        env_extra=CPU.env(),
        poll=ChildProgress(forward),
        keep_folders=(OUTPUT_FOLDER,),
        log_name="candidate.log",
    )
    what = "the candidate's Spark application"
    _check_ended(child.ended, what, child.raw)
    raw = child.raw or {}
    if raw.get("error"):
        raise ToolError(f"validate_on_data stopped in {what}: {raw['error']} (log: {folder / 'candidate.log'}); run_tests shows the candidate's own failures.")
    produced = folder / OUTPUT_FOLDER
    if not produced.is_dir():
        raise ToolError(f"{what} wrote no output (log: {folder / 'candidate.log'}).")
    produced.rename(folder / "candidate")
    return raw, child.ended.duration_s, child.confinement, hashlib.sha256(request["candidate"]["source"].encode()).hexdigest()


def _check_ended(ended: subprocess_runner.ProcessResult, what: str, raw: dict[str, Any] | None) -> None:
    if ended.cancelled:
        raise ToolError(f"validate_on_data was cancelled; {what} was stopped and nothing is left running.")
    if ended.timed_out:
        raise ToolError(f"validate_on_data did not finish within its time limit and {what} was stopped; pass limit= for fewer rows or a larger timeout_s (log: {ended.log_path}).")
    if not raw:
        raise ToolError(f"{what} failed (exit {ended.returncode}): {ended.tail[-1500:]} (log: {ended.log_path})")


def _read(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
