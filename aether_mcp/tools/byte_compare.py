"""byte_compare: prove a candidate equal to the original as Spark runs it, on the tests and on fresh hidden inputs.

Inputs: every row of tests/cases.py, the edge corpus of the argument types, and hidden rows
generated here from a fresh secret seed. The original runs in the reference worker (which never
loads candidate code), the candidate in the candidate worker with a batch shape drawn per call,
and every output is compared here, in the server, with the one comparator. Mismatching hidden
rows are shrunk to small counterexamples before they are reported.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import draws
from aether_mcp.backend import Resolved
from aether_mcp.bench_data import RAISE_REGIONS
from aether_mcp.judge import layouts, shrink
from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.judge.compare import RAISE_KIND, Difference, classify
from aether_mcp.judge.edge_inputs import edge_rows
from aether_mcp.judge.hidden_inputs import hidden_rows as generate_hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.judge.raise_regions import RaiseRegions
from aether_mcp.judge.row_measures import has_value, longest_string
from aether_mcp.judge.watch_events import WatchEvent, parse
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.spark_types import SUPPORTED_TYPES_TEXT, parse_type, unsupported_part
from aether_mcp.tools import device_proof
from aether_mcp.tools.device_proof import DeviceActivity
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace import TESTS_DIR, Workspace, candidate_results, deviations, new_run_id
from aether_mcp.workspace.candidates import BadCandidate, candidate_path, check_target, declared_target
from aether_mcp.workspace.deviations import AppliedDeviations
from aether_mcp.workspace.frozen_tests import require_frozen_tests_intact

Source = Literal["tests", "edge", "hidden"]
MAX_HIDDEN_ROWS = 200_000
MISMATCHES_PER_SOURCE = 5
SHRUNK_PER_CALL = MISMATCHES_PER_SOURCE
SHRINK_ROUNDS = 6
SHRINK_VARIANTS_PER_ROUND = 150
RAISED_SAMPLE = 20
# More hidden rows when too few returned: rounds, seconds, and the most rows drawn in all.
TOP_UP_ROUNDS = 3
TOP_UP_BUDGET_S = 90.0
TOP_UP_MAX_ROWS = 20_000
TOP_UP_POOL_FACTOR = 20  # generated rows tried per row wanted, when most of them have a learned feature
# Tests and edge rows always run in tiny batches; hidden rows in a layout drawn per call (judge.layouts).
SMALL_BATCH_SIZES = (1, 2, 7)
EMPTY_PARTITIONS = (0, 1, 3)
Progress = Callable[[int, int | None, str], None]


DEVICE_CHECK_TIMEOUT_S = 1_800


class SourceSummary(BaseModel):
    source: Source
    rows: int
    mismatched: int = Field(description="rows that differ, including rows where the original raised and the candidate returned")
    original_raised: int
    candidate_returned_where_original_raised: int = Field(0, description="of those, rows where the candidate returned a value (mismatches, unless a deviation allows it)")


class Mismatch(BaseModel):
    source: Source
    args: list[str] = Field(description="argument values (Python repr: 'nan', '-0.0', \"'\\tgold'\" are exact)")
    expected: str = Field(description="what the original returned (repr)")
    actual: str = Field(description="what the candidate returned (repr)")
    kind: str = Field(description="value, null vs value, NaN, sign of zero, type, exception, length or keys")
    detail: str
    ulp_distance: int | None = None
    shrunk_from: list[str] | None = Field(None, description="the hidden row as generated, when this counterexample was shrunk from it")


class MismatchKind(BaseModel):
    source: Source
    kind: str
    rows: int = Field(description="rows of this source that differ in this way")
    distinct: int = Field(description="distinct (expected, got) pairs among them; mismatches shows each kind in turn, new pairs first")


class RaisedExample(BaseModel):
    source: Source
    args: list[str]
    original_raised: str
    candidate: str = Field(description="what the candidate did on the row: 'raised <type>: <message>' or the value it returned")


class OriginalRaised(BaseModel):
    count: int
    candidate_raised: int = Field(0, description="rows where the candidate failed too (the exception types are shown, not required to match)")
    candidate_returned: int = Field(0, description="rows where the candidate returned a value: mismatches of kind 'original raised, candidate returned', unless a deviation allows it")
    allowed_by_deviation: int = Field(0, description="of those, rows a returns_where_original_raises deviation covers")
    examples: list[RaisedExample]
    note: str = (
        "where the original raises, its job fails: the candidate must fail too (any exception or Spark error; the "
        "types are reported, not required to match). A value there is a mismatch, unless record_deviation declares "
        "returns_where_original_raises."
    )


class Evidence(BaseModel):
    required_hidden_rows: int = Field(description="hidden rows on which the original returned that equal needs (aether.toml [compare] min_compared_rows, or every requested row if fewer)")
    hidden_rows_generated: int
    hidden_rows_compared: int = Field(description="hidden rows on which the original returned, compared")
    hidden_rows_original_raised: int
    hidden_rows_with_a_value: int = Field(0, description="hidden rows on which the original returned something other than null, NaN or an empty string or collection")
    extra_rows_drawn: int = Field(0, description="hidden rows drawn after learning where the original raises, to reach the required count")
    learned: list[str] = Field(default_factory=list, description="argument features the original raised on nearly always; the extra rows avoid them")
    hidden_rows_over_64_chars: int = Field(0, description="hidden rows with a string argument longer than 64 characters")
    hidden_rows_over_256_chars: int = Field(0, description="hidden rows with a string argument longer than 256 characters")
    enough: bool
    note: str


class ComparisonPolicy(BaseModel):
    floats: str = Field(description="'exact' (bit for bit) unless a ULP tolerance is declared")
    ulp_tolerance: int
    declared_deviations: list[str]
    argument_domains: list[str] = Field(default_factory=list, description="arguments drawn from the job's literals only (aether.toml values)")
    null_only_equals_null: bool = True
    nan_only_equals_nan: bool = True
    signed_zero_distinct: bool = True
    types_must_match: bool = True


class BatchShape(BaseModel):
    partitions: int
    empty_partitions: int
    max_records_per_batch: int


class ByteCompareResult(BaseModel):
    workspace: str
    candidate: str
    equal: bool | None = Field(description="true: no difference on enough evidence; false: a difference (or the candidate could not run); null: no verdict, too few rows on which the original returned (see evidence)")
    rows_compared: int = Field(description="rows on which the original returned, compared (rows where it raised are counted in original_raised)")
    evidence: Evidence
    sources: list[SourceSummary]
    mismatch_kinds: list[MismatchKind] = Field(default_factory=list, description="every mismatching row counted by source and kind, most common first")
    mismatches: list[Mismatch] = Field(description="examples: per source, each kind of mismatch in turn, distinct (expected, got) pairs first")
    original_raised: OriginalRaised
    rows_out_of_scope: int = Field(0, description="rows a recorded deviation declares out of scope (not compared)")
    error: str | None = Field(None, description="why the candidate could not be evaluated (then equal is false)")
    contract_problems: list[str] = Field(description="output type or nullability that differs from the original's")
    output_type: str | None
    expected_output_type: str
    policy: ComparisonPolicy
    backend: Literal["cpu", "gpu"] = Field(description="where the candidate ran: the CPU backend (pandas/NumPy, kernels simulated) or the GPU one")
    simulated: bool = Field(description="a kernel candidate ran under numba's CUDA simulator: correctness only, no GPU speed")
    gpu_verified: bool = Field(description="device activity was recorded and shows the work on the GPU; always false on the CPU backend")
    backend_note: str = Field(description="how the candidate ran, and what the device check saw")
    device_activity: DeviceActivity | None = Field(None, description="GPU backend with nsys: kernel launches and host/device copies")
    confined: bool = Field(False, description="the candidate ran in a confined worker (no access to original/, .aether/ or the server's state; writes only to its scratch)")
    confinement: str = Field("", description="how the candidate's processes were confined, or why not")
    watch_events: list[WatchEvent] = Field(default_factory=list, description="what the watch saw the candidate do while it was compared (audit_candidate fails it on any of these)")
    batch_shape: BatchShape = Field(description="layout of the hidden rows for the candidate, drawn per call")
    small_batch_shape: BatchShape = Field(description="layout of the test and edge rows: always tiny batches")
    duration_s: float
    result_path: str


@draws.recorded_call("byte_compare")
def byte_compare(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str,
    hidden_rows: int = 20_000,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    backend: str | None = None,
    prove_device: bool = True,
) -> ByteCompareResult:
    started = time.monotonic()
    opened = Workspace.open_intact(root, workspace)
    target = check_target(opened, candidate if candidate.startswith("candidate:") else f"candidate:{candidate}")
    require_frozen_tests_intact(opened, "byte_compare")
    if not 0 <= hidden_rows <= MAX_HIDDEN_ROWS:
        raise ToolError(f"hidden_rows must be between 0 and {MAX_HIDDEN_ROWS} (got {hidden_rows}).")
    resolved = device_proof.choose(opened, target, backend)
    _check_types(opened)
    report = progress or (lambda done, total, message: None)

    report(0, 4, "generating inputs")
    case_rows = read_case_rows(opened.path / TESTS_DIR / "cases.py")
    inputs: list[tuple[Source, list[Any]]] = [("tests", row) for row in case_rows]
    inputs += [("edge", row) for row in edge_rows(opened.config, case_rows)]
    mined = mine(opened.verified_original())
    inputs += [("hidden", row) for row in generate_hidden_rows(opened.config, mined, hidden_rows, draws.seed("byte_compare.hidden"))]
    shape_rng = random.Random(draws.seed("byte_compare.layout"))
    small_shape = BatchShape(partitions=shape_rng.choice((1, 2, 3)), empty_partitions=shape_rng.choice(EMPTY_PARTITIONS), max_records_per_batch=shape_rng.choice(SMALL_BATCH_SIZES))
    shape = BatchShape(**layouts.draw(shape_rng, layouts.job_batch(opened.config.spark.conf), hidden_rows))
    rows = [row for _, row in inputs]

    comparison = Comparison(opened, workers, target, cancel, resolved.name)
    candidate_run = _CandidateRun(workers, opened, target, rows, [source for source, _ in inputs], small_shape, shape, cancel, resolved.name)
    # Every candidate runs on every row, alongside the original: a vectorized candidate isolates
    # its own failing rows, a sql candidate's failing rows are found in one job under TryEval.
    report(1, 4, f"evaluating the original and {target} on {len(rows)} rows")
    with ThreadPoolExecutor(max_workers=2) as executor:
        candidate_future = executor.submit(candidate_run.evaluate, list(range(len(rows))))
        try:
            expected = workers.evaluate("reference", opened, "original", rows, typed=True, cancel=cancel).outputs
            extra = _Evidence(opened, comparison, hidden_rows, mined, inputs, rows, expected, cancel, report).top_up()
            extra.record_regions()
        except EvaluationFailed as exc:
            candidate_future.result()
            raise ToolError(f"the original could not be evaluated ({exc}); run_tests(workspace, 'original') shows the same problem in context.") from None
        candidate_future.result()
    candidate_run.sources += ["hidden"] * len(extra.indices)
    if extra.indices and candidate_run.error is None and not candidate_run.cancelled:
        report(2, 4, f"evaluating {target} on {len(extra.indices)} more hidden rows")
        candidate_run.evaluate(extra.indices)
    if candidate_run.cancelled:
        raise ToolError(candidate_run.error or "byte_compare was cancelled")
    actual, error, output_type, contract_problems = candidate_run.actual, candidate_run.error, candidate_run.output_type, candidate_run.contract_problems
    raised = [i for i, value in enumerate(expected) if isinstance(value, Raised)]
    clean = [i for i, value in enumerate(expected) if not isinstance(value, Raised)]

    mismatches: list[Mismatch] = []
    mismatched: dict[Source, int] = {"tests": 0, "edge": 0, "hidden": 0}
    returned_on_raise: dict[Source, int] = {"tests": 0, "edge": 0, "hidden": 0}
    to_shrink: list[int] = []
    groups: dict[tuple[Source, str], list[tuple[int, Difference]]] = {}
    excluded = 0
    hidden_compared = 0
    raise_outcome = {"raised": 0, "returned": 0, "allowed": 0}
    raised_rows = set(raised)
    if error is None:
        for index in clean + raised:
            found, out_of_scope = comparison.difference(rows[index], expected[index], actual[index])
            excluded += out_of_scope
            source = inputs[index][0]
            if index in raised_rows and not out_of_scope:
                outcome = comparison.raise_outcome(rows[index], actual[index])
                raise_outcome[outcome] += 1
                if outcome != "raised":
                    returned_on_raise[source] += 1
            elif source == "hidden" and not out_of_scope:
                hidden_compared += 1
            if found is None:
                continue
            mismatched[source] += 1
            groups.setdefault((source, found.kind), []).append((index, found))
        for index, found in _examples(groups, expected, actual):
            source = inputs[index][0]
            mismatches.append(_mismatch(source, rows[index], expected[index], actual[index], found))
            if source == "hidden" and found.kind != RAISE_KIND and len(to_shrink) < SHRUNK_PER_CALL:
                to_shrink.append(len(mismatches) - 1)
        if to_shrink and not contract_problems:  # with the wrong output type every row differs: nothing to shrink
            report(3, 4, f"shrinking {len(to_shrink)} counterexample(s)")
            shown = {tuple(m.args) for m in mismatches}
            for position, shrunk in zip(to_shrink, comparison.shrink([_original_row(inputs, mismatches[p]) for p in to_shrink])):
                # Two rows may shrink to one counterexample: then the second keeps its own row.
                if shrunk is not None and tuple(repr(v) for v in shrunk.row) not in shown:
                    shown.add(tuple(repr(v) for v in shrunk.row))
                    original_args = mismatches[position].args
                    mismatches[position] = _mismatch("hidden", shrunk.row, shrunk.expected, shrunk.actual, shrunk.difference)
                    mismatches[position].shrunk_from = original_args

    raised_examples = [] if error is not None else _raised_examples(inputs, rows, expected, actual, raised)
    sources = [
        SourceSummary(
            source=name,
            rows=sum(1 for source, _ in inputs if source == name),
            mismatched=mismatched[name],
            original_raised=sum(1 for i in raised if inputs[i][0] == name),
            candidate_returned_where_original_raised=returned_on_raise[name],
        )
        for name in ("tests", "edge", "hidden")
    ]
    evidence = extra.evidence(hidden_compared if error is None else 0)
    differs = error is not None or bool(contract_problems) or sum(mismatched.values()) > 0
    equal = False if differs else True if evidence.enough else None
    if resolved.name == "gpu" and error is not None:
        activity, verified, proof_note = None, False, "gpu_verified: false (not checked: the candidate could not be evaluated)"
    elif resolved.name == "gpu" and not prove_device:
        activity, verified, proof_note = None, False, "gpu_verified: false (not checked here: the run that follows checks it)"
    else:
        activity, verified, proof_note = device_proof.prove(opened, target.removeprefix("candidate:"), resolved, DEVICE_CHECK_TIMEOUT_S, cancel, report)
    run_id = new_run_id()
    result_path = opened.state_dir / "runs" / run_id / "byte_compare.json"
    result = ByteCompareResult(
        workspace=str(opened.path),
        candidate=target.removeprefix("candidate:"),
        equal=equal,
        rows_compared=len(clean) - excluded if error is None else 0,
        evidence=evidence,
        rows_out_of_scope=excluded,
        sources=sources,
        mismatch_kinds=_kind_counts(groups, expected, actual),
        mismatches=mismatches,
        original_raised=OriginalRaised(
            count=len(raised),
            candidate_raised=raise_outcome["raised"],
            candidate_returned=raise_outcome["returned"] + raise_outcome["allowed"],
            allowed_by_deviation=raise_outcome["allowed"],
            examples=raised_examples,
        ),
        error=error,
        contract_problems=contract_problems,
        output_type=output_type,
        expected_output_type=opened.config.udf.return_type,
        policy=comparison.policy(),
        backend=resolved.name,  # type: ignore[arg-type]
        simulated=resolved.simulated,
        gpu_verified=verified,
        backend_note=f"{_backend(opened, target, resolved)}; {proof_note}",
        device_activity=activity,
        confined=candidate_run.confinement.confined if candidate_run.confinement else False,
        confinement=candidate_run.confinement.how if candidate_run.confinement else "the candidate did not run",
        watch_events=parse(candidate_run.events),
        batch_shape=shape,
        small_batch_shape=small_shape,
        duration_s=round(time.monotonic() - started, 3),
        result_path=str(result_path),
    )
    result_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    _record_latest(opened, result, target)
    report(4, 4, "equal" if equal else "not equal" if equal is False else "no verdict: too little evidence")
    return result


class _CandidateRun:
    """The candidate on a set of rows: test and edge rows in tiny batches, hidden rows in the drawn layout."""

    def __init__(self, workers, workspace, target, rows, sources, small_shape, shape, cancel, backend: str = "cpu") -> None:
        self.workers, self.workspace, self.target, self.rows, self.sources = workers, workspace, target, rows, sources
        self.backend = backend
        self.small_shape, self.shape, self.cancel = small_shape, shape, cancel
        self.actual: dict[int, Any] = {}
        self.error: str | None = None
        self.cancelled = False
        self.output_type: str | None = None
        self.contract_problems: list[str] = []
        self.events: list[dict] = []
        self.confinement = None

    def evaluate(self, indices: list[int]) -> None:
        parts = (
            ([i for i in indices if self.sources[i] != "hidden"], self.small_shape),
            ([i for i in indices if self.sources[i] == "hidden"], self.shape),
        )
        try:
            self.confinement = self.workers.get("candidate", self.workspace.config.spark, self.backend).confinement
            for part, shape in parts:
                if not part:
                    continue
                evaluation = self.workers.evaluate(
                    "candidate", self.workspace, self.target, [self.rows[i] for i in part], shape=shape.model_dump(), typed=True, cancel=self.cancel, backend=self.backend
                )
                self.actual.update(zip(part, evaluation.outputs))
                self.events += evaluation.events
                self.confinement = evaluation.confinement
                self.output_type = evaluation.output_type
                self.contract_problems = _contract_problems(self.workspace, evaluation.output_type, evaluation.output_nullable)
        except EvaluationFailed as exc:
            self.events += exc.events
            self.cancelled = exc.kind == "cancelled"
            self.error = str(exc) if self.cancelled else f"{self.target} could not be evaluated: {exc}"


class _Shrunk:
    def __init__(self, row, expected, actual, difference) -> None:
        self.row = row
        self.expected = expected
        self.actual = actual
        self.difference = difference


class Comparison:
    def __init__(self, workspace: Workspace, workers: WorkerPool, target: str, cancel: threading.Event | None, backend: str = "cpu") -> None:
        self.workspace = workspace
        self.backend = backend
        self.workers = workers
        self.target = target
        self.cancel = cancel
        compare = workspace.config.compare
        self.ulp_tolerance = compare.ulp_tolerance if compare.floats == "ulp" else 0
        self.deviations = deviations.load(workspace, target.removeprefix("candidate:"))
        self.applied = AppliedDeviations(self.deviations, [a.name for a in workspace.config.udf.args])
        self.return_type = parse_type(workspace.config.udf.return_type)  # ULPs are the result type's

    def policy(self) -> ComparisonPolicy:
        declared = [f"floats within {self.ulp_tolerance} ULP count as equal (aether.toml [compare])"] if self.ulp_tolerance else []
        declared += [d.describe() for d in self.deviations]
        domains = [f"{a.name}: only {', '.join(repr(v) for v in a.values)} ({a.values_from})" for a in self.workspace.config.udf.args if a.values]
        return ComparisonPolicy(floats=self.workspace.config.compare.floats, ulp_tolerance=self.ulp_tolerance, declared_deviations=declared, argument_domains=domains)

    def difference(self, row: list[Any], expected: Any, actual: Any):
        """The difference under the policy and the row's deviations; (None, True) when the row is out of scope.

        Where the original raised, the candidate must fail too (any exception: the types are
        shown, not compared), unless a deviation lets it return there.
        """
        excluded, tolerance = self.applied.for_row(row)
        if excluded:
            return None, True
        if isinstance(expected, Raised):
            if self.raise_outcome(row, actual) == "returned":
                return Difference(RAISE_KIND, f"{RAISE_KIND}: the original raised {expected}, the candidate returned {actual!r}"), False
            return None, False
        return classify(expected, actual, max(self.ulp_tolerance, tolerance), data_type=self.return_type), False

    def raise_outcome(self, row: list[Any], actual: Any) -> str:
        """On a row where the original raised: 'raised', 'allowed' (returned, under a deviation) or 'returned'."""
        if isinstance(actual, Raised):
            return "raised"
        return "allowed" if self.applied.may_return_where_original_raises(row) else "returned"

    def both(self, rows: list[list[Any]]) -> tuple[list[Any], list[Any]]:
        expected = self.workers.evaluate("reference", self.workspace, "original", rows, cancel=self.cancel).outputs
        actual = self.workers.evaluate("candidate", self.workspace, self.target, rows, cancel=self.cancel, backend=self.backend).outputs
        return expected, actual

    def shrink(self, start_rows: list[list[Any]]) -> list[_Shrunk | None]:
        """For each mismatching row, the simplest variant found that still mismatches."""
        current = [list(row) for row in start_rows]
        best: list[_Shrunk | None] = [None] * len(current)
        for _ in range(SHRINK_ROUNDS):
            proposals: list[tuple[int, list[Any]]] = []
            for which, row in enumerate(current):
                for position, value in enumerate(row):
                    for simpler in shrink.variants(value)[:25]:
                        proposals.append((which, row[:position] + [simpler] + row[position + 1 :]))
            proposals = proposals[:SHRINK_VARIANTS_PER_ROUND]
            if not proposals:
                break
            try:
                expected, actual = self.both([row for _, row in proposals])
            except EvaluationFailed:
                break
            improved = False
            for (which, row), e, a in zip(proposals, expected, actual):
                if isinstance(e, Raised):
                    continue
                found, _ = self.difference(row, e, a)
                if found is None:
                    continue
                if shrink.row_complexity(row) < shrink.row_complexity(current[which]):
                    current[which] = row
                    best[which] = _Shrunk(row, e, a, found)
                    improved = True
            if not improved:
                break
        return best


class _Evidence:
    """Whether enough hidden rows returned to judge on, and more of them where too few did."""

    def __init__(self, workspace, comparison, requested, mined, inputs, rows, expected, cancel, report) -> None:
        self.workspace, self.comparison, self.mined = workspace, comparison, mined
        self.inputs, self.rows, self.expected = inputs, rows, expected
        self.cancel, self.report = cancel, report
        self.required = min(workspace.config.compare.min_compared_rows, requested)
        self.valued_required = min(workspace.config.compare.min_rows_with_a_value, self.required)
        self.indices: list[int] = []
        self.learned: list[str] = []

    def _hidden(self) -> list[int]:
        return [i for i, (source, _) in enumerate(self.inputs) if source == "hidden"]

    def _returned(self, index: int) -> bool:
        return not isinstance(self.expected[index], Raised) and not self.comparison.applied.for_row(self.rows[index])[0]

    def _valued(self, index: int) -> bool:
        return self._returned(index) and has_value(self.expected[index])

    def top_up(self) -> _Evidence:
        """Draw more hidden rows, avoiding what the original raised on, until enough returned (or the budget ends)."""
        started = time.monotonic()
        names = [a.name for a in self.workspace.config.udf.args]
        for _ in range(TOP_UP_ROUNDS):
            hidden = self._hidden()
            have = sum(1 for i in hidden if self._returned(i))
            valued = sum(1 for i in hidden if self._valued(i))
            if (have >= self.required and valued >= self.valued_required) or (self.cancel is not None and self.cancel.is_set()):
                break
            if time.monotonic() - started > TOP_UP_BUDGET_S or len(self.indices) >= TOP_UP_MAX_ROWS:
                break
            regions = RaiseRegions([self.rows[i] for i in hidden], [self.expected[i] for i in hidden])
            self.learned = regions.describe(names)
            allowed = [i for i in hidden if regions.allows(self.rows[i])]
            share = sum(1 for i in allowed if self._returned(i)) / len(allowed) if allowed else (0.5 if regions.learned else 0.0)
            valued_share = sum(1 for i in allowed if self._valued(i)) / len(allowed) if allowed else share
            if share == 0.0 or (have >= self.required and valued_share == 0.0):
                break  # nothing returned (or gave a value), and nothing learned to avoid: more of the same would not either
            missing = max((self.required - have) / share, (self.valued_required - valued) / valued_share if valued_share else 0.0)
            wanted = min(TOP_UP_MAX_ROWS - len(self.indices), int(missing * 1.3) + 10)
            drawn: list[list[Any]] = []
            tried = 0
            while len(drawn) < wanted and tried < wanted * TOP_UP_POOL_FACTOR:
                pool = generate_hidden_rows(self.workspace.config, self.mined, min(20_000, wanted * 2), draws.seed("byte_compare.top_up"))
                tried += len(pool)
                drawn += [row for row in pool if regions.allows(row)][: wanted - len(drawn)]
            if not drawn:
                break
            self.report(1, 4, f"the original returned on {have} of {len(hidden)} hidden rows ({valued} with a value); drawing {len(drawn)} more" + (f" avoiding {'; '.join(self.learned)}" if self.learned else ""))
            outputs = self.comparison.workers.evaluate("reference", self.workspace, "original", drawn, typed=True, cancel=self.cancel).outputs
            first = len(self.rows)
            self.inputs += [("hidden", row) for row in drawn]
            self.rows += drawn
            self.expected += outputs
            self.indices += list(range(first, len(self.rows)))
        return self

    def record_regions(self) -> None:
        """Write what the original raised on over every hidden row, for benchmark data to avoid (bench_data.RAISE_REGIONS)."""
        hidden = self._hidden()
        if not hidden:
            return
        regions = RaiseRegions([self.rows[i] for i in hidden], [self.expected[i] for i in hidden])
        names = [a.name for a in self.workspace.config.udf.args]
        learned: dict[str, list[dict[str, str]]] = {}
        for found in regions.learned:
            learned.setdefault(names[found.position], []).append({"feature": found.feature, "text": found.describe(names)})
        raised = sum(1 for i in hidden if isinstance(self.expected[i], Raised))
        record = {"hidden_rows": len(hidden), "raised": raised, "learned": [{"arg": name, "features": features} for name, features in learned.items()]}
        path = self.workspace.state_dir / RAISE_REGIONS
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.workspace.lock():
            path.write_text(json.dumps(record, indent=2), encoding="utf-8")

    def evidence(self, compared: int) -> Evidence:
        hidden = self._hidden()
        raised = sum(1 for i in hidden if isinstance(self.expected[i], Raised))
        valued = sum(1 for i in hidden if not isinstance(self.expected[i], Raised) and has_value(self.expected[i]))
        enough = compared >= self.required and valued >= self.valued_required
        if enough:
            note = f"equal needs {self.required} compared hidden rows on which the original returned; {compared} were compared"
        elif compared >= self.required:
            note = f"too little evidence: {compared} hidden rows compared, but the original gave a value (not null, NaN or empty) on only {valued} of them where equal needs {self.valued_required}: a candidate that returns nothing would look equal. Check the argument types in aether.toml, or give the arguments values the UDF acts on (record_cases shows which do)"
        elif compared == 0 and hidden and raised == len(hidden):
            note = (
                f"no evidence: the original raised on {raised} of {len(hidden)} hidden rows, so nothing could be compared. "
                "Check that the argument types in aether.toml are what the job passes, and record_cases with rows on which the original returns."
            )
        else:
            note = (
                f"too little evidence: {compared} hidden rows compared where equal needs {self.required} (the original raised on {raised} of "
                f"{len(hidden)}). Check the argument types in aether.toml, record_cases with rows on which the original returns, or lower "
                "[compare] min_compared_rows only if the UDF's real inputs are this narrow."
            )
        long_rows, longer_rows = (sum(1 for i in hidden if longest_string(self.rows[i]) > size) for size in (64, 256))
        if long_rows:
            note += f"; {long_rows} hidden rows had a string argument over 64 characters ({longer_rows} over 256)"
        if enough and valued < compared // 10:
            note += f"; only {valued} of the {compared} compared rows gave a value (not null, NaN or empty): record_cases with rows that do"
        if self.indices:
            note += f"; {len(self.indices)} extra rows were drawn" + (f" avoiding {'; '.join(self.learned)}" if self.learned else "")
        return Evidence(
            required_hidden_rows=self.required,
            hidden_rows_generated=len(hidden),
            hidden_rows_compared=compared,
            hidden_rows_original_raised=raised,
            extra_rows_drawn=len(self.indices),
            learned=self.learned,
            hidden_rows_with_a_value=valued,
            hidden_rows_over_64_chars=long_rows,
            hidden_rows_over_256_chars=longer_rows,
            enough=enough,
            note=note,
        )


def _raised_examples(inputs, rows, expected, actual, raised: list[int]) -> list[RaisedExample]:
    """Rows the original raised on, those where the candidate returned first."""
    returned = [i for i in raised if not isinstance(actual.get(i), Raised)]
    failed = [i for i in raised if isinstance(actual.get(i), Raised)]
    chosen = returned[: RAISED_SAMPLE // 2] + failed[: RAISED_SAMPLE - min(len(returned), RAISED_SAMPLE // 2)]
    return [RaisedExample(source=inputs[i][0], args=[repr(v) for v in rows[i]], original_raised=str(expected[i]), candidate=_show(actual.get(i))) for i in chosen[:RAISED_SAMPLE]]


def _original_row(inputs: list[tuple[Source, list[Any]]], mismatch: Mismatch) -> list[Any]:
    for source, row in inputs:
        if source == mismatch.source and [repr(v) for v in row] == mismatch.args:
            return row
    raise AssertionError("a reported mismatch must come from an input row")


def _examples(groups: dict[tuple[Source, str], list[tuple[int, Difference]]], expected: list[Any], actual: list[Any]) -> list[tuple[int, Difference]]:
    """Up to MISMATCHES_PER_SOURCE examples per source (and as many of raises), taken in turn from each kind of
    mismatch: first each kind's (expected, got) pairs not shown yet, then, once no kind has a new pair, repeats."""
    chosen: list[tuple[int, Difference]] = []
    for source in ("tests", "edge", "hidden"):
        for raises in (False, True):
            kinds = [entries for (where, kind), entries in groups.items() if where == source and (kind == RAISE_KIND) == raises]
            split = [_distinct_first(entries, expected, actual) for entries in kinds]
            taken = 0
            # a kind whose pairs are all shown gives its turn to kinds that still have new ones
            for queues in ([new for new, _ in split], [repeats for _, repeats in split]):
                while taken < MISMATCHES_PER_SOURCE and any(queues):
                    for queue in queues:
                        if queue and taken < MISMATCHES_PER_SOURCE:
                            chosen.append(queue.pop(0))
                            taken += 1
    return chosen


def _kind_counts(groups: dict[tuple[Source, str], list[tuple[int, Difference]]], expected: list[Any], actual: list[Any]) -> list[MismatchKind]:
    counts = [
        MismatchKind(source=source, kind=kind, rows=len(entries), distinct=len({(_show(expected[i]), _show(actual[i])) for i, _ in entries}))
        for (source, kind), entries in groups.items()
    ]
    return sorted(counts, key=lambda c: (-c.rows, c.source, c.kind))


def _distinct_first(entries: list[tuple[int, Difference]], expected: list[Any], actual: list[Any]) -> tuple[list[tuple[int, Difference]], list[tuple[int, Difference]]]:
    """(the entries showing each (expected, got) pair the first time, the repeats), in row order within each."""
    seen: set[tuple[str, str]] = set()
    first, repeats = [], []
    for index, found in entries:
        pair = (_show(expected[index]), _show(actual[index]))
        (repeats if pair in seen else first).append((index, found))
        seen.add(pair)
    return first, repeats


def _mismatch(source: Source, row: list[Any], expected: Any, actual: Any, found) -> Mismatch:
    return Mismatch(
        source=source,
        args=[repr(value) for value in row],
        expected=_show(expected),
        actual=_show(actual),
        kind=found.kind,
        detail=found.detail,
        ulp_distance=found.ulp,
    )


def _show(value: Any) -> str:
    return f"raised {value}" if isinstance(value, Raised) else repr(value)


def _check_types(workspace: Workspace) -> None:
    # init_workspace refuses these types; a workspace made before that check still gets a clear answer.
    udf = workspace.config.udf
    for arg in udf.args:
        part = unsupported_part(parse_type(arg.type))
        if part:
            raise ToolError(f"byte_compare does not support {part} yet (argument {arg.name!r} is {arg.type}); supported: {SUPPORTED_TYPES_TEXT}.")
    part = unsupported_part(parse_type(udf.return_type))
    if part:
        raise ToolError(f"byte_compare does not support {part} yet (the UDF returns {udf.return_type}); supported: {SUPPORTED_TYPES_TEXT}.")


def _contract_problems(workspace: Workspace, output_type: str, nullable: bool) -> list[str]:
    problems = []
    declared = workspace.config.udf.return_type
    if output_type != declared:
        problems.append(f"the candidate returns {output_type} but the original returns {declared}; cast the result to {declared}")
    if not nullable:
        problems.append(
            "the candidate's column is not nullable but the original UDF's is; make the result nullable "
            "(for example end with F.when(result.isNotNull(), result))"
        )
    return problems


def _candidate_kind(workspace: Workspace, target: str) -> str | None:
    try:
        return declared_target(candidate_path(workspace, target).read_text(encoding="utf-8"), target)
    except (BadCandidate, OSError, UnicodeDecodeError):
        return None


def _backend(workspace: Workspace, target: str, resolved: Resolved) -> str:
    kind = _candidate_kind(workspace, target)
    if kind is None:
        return "unknown (the candidate does not declare a valid TARGET)"
    if kind == "sql":
        return "spark-sql: JVM expressions, no Python"
    return f"{kind} candidate over Arrow batches (mapInArrow): {resolved.note}"


def _record_latest(workspace: Workspace, result: ByteCompareResult, target: str) -> None:
    candidate_results.record(
        workspace,
        "compares",
        result.candidate,
        {
            "equal": result.equal,
            "rows_compared": result.rows_compared,
            "evidence": result.evidence.note,
            "mismatched": sum(s.mismatched for s in result.sources),
            "backend": result.backend,
            "simulated": result.simulated,
            "gpu_verified": result.gpu_verified,
            "confined": result.confined,
            "result_path": result.result_path,
        },
    )
