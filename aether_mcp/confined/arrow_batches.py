"""Runs inside Spark's Python workers: feeds Arrow batches to a vectorized candidate and back.

Kept light (pandas, NumPy, pyarrow and the watch only) because every Python worker imports it. The candidate's
source travels inside the pickled mapper (by value), is compiled once per worker process and
cached by content hash, so an edited candidate is always the one that runs and the worker that
drives Spark never executes it.

Columns reach `evaluate(*series)` as the process's backend gives them (aether_mcp.backend: cuDF
Series on the GPU backend, converted from Arrow on the device). On the CPU backend, with null
and NaN kept apart: floating columns are pandas
`Float64`/`Float32` arrays whose mask marks only nulls (a NaN is a value), integers and booleans
are nullable `Int*`/`boolean`, strings are `string[python]` (Python str semantics). The returned
Series goes back the same way: a masked array's mask is the null mask, a NumPy float NaN stays
NaN, None and pd.NA are null. Every call the judge makes gets its series as a job's Arrow UDF does
(aether_mcp.arrow_udf.arguments and .call), so no call can be told from a job's by what its arguments are.
"""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from aether_mcp.arrow_udf import arguments, call, run_on_arrow
from aether_mcp.confined import job_environment, watch

ROW_ID = "__aether_row_id"
OUTPUT = "__aether_output"
ERROR = "__aether_error"
EVENTS = "__aether_events"
AUDIT = "__aether_audit"
IMPORT_FAILURE = "AETHER_CANDIDATE_IMPORT_FAILED"

_LOADED: dict[str, types.ModuleType] = {}
# What each row did when the isolation of a failing batch called the candidate on it alone (None: it returned; else what
# it raised), per candidate as loaded in this worker process, keyed by the row's exact argument values. The same rows
# reach a worker again in the next layout of the same call and in the next call: their isolation then needs fewer
# calls. Every batch's own call and the call over the rows that return together still run (see _Memo).
_ALONE: dict[str, _Alone] = {}
ALONE_BYTES_KEPT = 16_000_000  # about, per memory (candidate and types) and process: beyond it, rows are isolated by calls again


class _Alone:
    """What rows did alone (row key -> None or what it raised; each text kept once), and about how many bytes that holds."""

    __slots__ = ("outcomes", "texts", "size")

    def __init__(self) -> None:
        self.outcomes: dict[tuple, str | None] = {}
        self.texts: dict[str, str] = {}
        self.size = 0


class CandidateImportError(RuntimeError):
    """The candidate module failed while being loaded in a Python worker."""


def candidate_module(source: str, digest: str, filename: str, named: str | None = None) -> types.ModuleType:
    """The candidate compiled from `source`, once per process and content hash, named `named` (its name in the job) where it can be."""
    module = _LOADED.get(digest)
    if module is not None:
        sys.modules[module.__name__] = module
        return module
    from aether_mcp.evaluation.source_modules import _MADE, module_name

    job_environment.as_in_a_job()
    name = module_name("aether_candidate", source.encode("utf-8"), named)
    module = types.ModuleType(name)
    module.__file__ = filename
    before = sys.modules.get(name)
    sys.modules[name] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except BaseException as exc:
        if before is not None:
            sys.modules[name] = before
        else:
            del sys.modules[name]
        raise CandidateImportError(f"{IMPORT_FAILURE}: {exc.__class__.__name__}: {exc}") from exc
    _LOADED[digest] = module
    _MADE[(name, digest)] = module
    return module


def passthrough(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A mapInArrow function that runs no agent code: it starts a fresh Python daemon and worker on harness code alone."""
    yield from batches


def make_mapper(
    source: str,
    digest: str,
    filename: str,
    entry_point: str,
    return_type: pa.DataType,
    audit: bool = False,
    lengths: list[int] | None = None,
    named: str | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A mapInArrow function: (row id, args...) batches in, (row id, output, error, events) batches out.

    A batch on which the candidate raises is split in this process until each failure is one
    row, so one bad row costs no failed Spark job; its error column says what was raised. The rows
    left must return together, as in a job's batch, or each of them raised too (`_evaluate_batch`);
    a batch the watch refused is not split (every row reports the refusal). The
    watch (installed before the candidate loads) reports what the candidate did in the events
    column, on each batch's first row. With `audit`, the candidate is loaded afresh, its steps
    are counted batch by batch, and each batch carries a report in an extra column. `lengths`:
    the candidate gets the rows in consecutive batches of exactly these lengths (Spark's own
    batches are cut to them), so a sweep of batch lengths reaches it whatever Spark's batching.
    """

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        watch.install([os.path.dirname(filename)])
        module = candidate_module(source, digest + (":audit" if audit else ""), filename, named)
        evaluate = getattr(module, entry_point)
        kernels = watch.kernel_code(module) if audit else set()
        for batch in _cut(batches, lengths) if lengths else batches:
            if batch.num_rows == 0:
                continue
            columns = batch.columns[1:]
            series = arguments(columns)
            # one memory per candidate as loaded here and per what shapes a call's outcome: argument and return types, entry point
            key = f"{digest}:{audit}:{entry_point}:{batch.schema.types[1:]}:{return_type}"
            if key not in _ALONE and len(_ALONE) >= 4:  # (audited or not, other argument types: a worker keeps the latest few)
                _ALONE.clear()
            alone = _ALONE.setdefault(key, _Alone())
            memo = _Memo(batch, alone)
            if not audit:
                outputs, errors = _evaluate_batch(evaluate, columns, series, return_type, memo=memo)
                yield pa.RecordBatch.from_arrays([batch.column(0), outputs, errors, _events(batch.num_rows)], names=[ROW_ID, OUTPUT, ERROR, EVENTS])
                continue
            before = watch.checksum(series)
            state = watch.module_state(module)
            with watch.Watch(kernels, module) as watched:
                # When the whole batch's call raises, the isolation calls the candidate about once a row by design:
                # those calls are never counted (the count then comes from one call over the rows that return,
                # below), so they run without the step counter, several times faster. Threads, children, module
                # state and the audit hook are still watched across them.
                outputs, errors = _evaluate_batch(evaluate, columns, series, return_type, on_failure=watched.stop_counting, memo=memo)
            changed = _changed_state(state, watch.module_state(module))
            rows = batch.num_rows
            calls = watched.calls
            if errors.null_count < batch.num_rows:
                # Rows that raise were isolated by splitting, which calls the candidate many times;
                # Python work per row is counted on one call over the rows that succeed (none: nothing to count).
                rows, calls = errors.null_count, 0
                if rows:
                    clean = arguments(_runs(columns, errors.is_null().to_numpy(zero_copy_only=False)))
                    with watch.Watch(kernels, module) as counted:
                        try:
                            call(evaluate, clean, return_type)
                        except Exception:
                            pass  # the outputs above stand; this run only counts calls
                    calls = counted.calls
            report = {
                "rows": rows,
                "calls": calls,
                "inputs_changed": watch.checksum(series) != before,
                "state_changed": changed,
                "threads_left": watched.threads_left,
                "children_left": watched.children_left,
            }
            audit_column = pa.array([json.dumps(report)] + [None] * (batch.num_rows - 1), pa.string())
            yield pa.RecordBatch.from_arrays([batch.column(0), outputs, errors, _events(batch.num_rows), audit_column], names=[ROW_ID, OUTPUT, ERROR, EVENTS, AUDIT])

    return mapper


def make_group_mapper(
    source: str, digest: str, filename: str, entry_point: str, return_type: pa.DataType, audit: bool = False, named: str | None = None
) -> Callable[[pa.Table], pa.Table]:
    """An applyInArrow function for an aggregation: one group's (row id, args...) in, one (row id, output, error, events) row out.

    The group's columns reach `evaluate(*series)` converted as everywhere else (null and NaN
    apart); what it raises is that group's error, and the watch's events ride along. With
    `audit`, the candidate is loaded afresh and its steps on each group are counted, in an extra
    column, with the number of values the group held.
    """
    from aether_mcp.arrow_udf import aggregate_on_arrow

    def mapper(table: pa.Table) -> pa.Table:
        watch.install([os.path.dirname(filename)])
        module = candidate_module(source, digest + (":audit" if audit else ""), filename, named)
        evaluate = getattr(module, entry_point)
        row_id = table.column(0).combine_chunks()[:1]
        columns = table.columns[1:]  # (aggregate_on_arrow copies them, as in a job: aether_mcp.arrow_udf.arguments)
        watched = None
        changed: list[str] = []
        try:
            if audit:
                state = watch.module_state(module)
                with watch.Watch(watch.kernel_code(module), module) as watched:
                    output = aggregate_on_arrow(evaluate, columns, return_type)
                changed = _changed_state(state, watch.module_state(module))
            else:
                output = aggregate_on_arrow(evaluate, columns, return_type)
            error = pa.nulls(1, pa.string())
        except CandidateImportError:
            raise
        except Exception as exc:
            output, error = pa.nulls(1, return_type), pa.array([f"{type(exc).__name__}: {exc}"], pa.string())
        arrays, names = [row_id, output, error, _events(1)], [ROW_ID, OUTPUT, ERROR, EVENTS]
        if audit:
            report = {"rows": table.num_rows, "calls": watched.calls if watched else 0, "inputs_changed": False, "state_changed": changed, "threads_left": watched.threads_left if watched else 0, "children_left": watched.children_left if watched else 0}
            arrays.append(pa.array([json.dumps(report)], pa.string()))
            names.append(AUDIT)
        return pa.Table.from_arrays(arrays, names=names)

    return mapper


def _cut(batches: Iterator[pa.RecordBatch], lengths: list[int]) -> Iterator[pa.RecordBatch]:
    """The rows of `batches` again, in consecutive slices of `lengths` rows (a slice never spans two batches)."""
    queue = list(lengths)
    for batch in batches:
        offset = 0
        while offset < batch.num_rows:
            size = min(queue.pop(0) if queue else batch.num_rows, batch.num_rows - offset)
            yield batch.slice(offset, size)
            offset += size


def _changed_state(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The module-level names whose value a call changed, added or removed."""
    return sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))


def _events(rows: int) -> pa.Array:
    """The watch events recorded since the last batch, on the first of `rows` rows."""
    found = watch.drain()
    return pa.array([json.dumps(found) if found else None] + [None] * (rows - 1), pa.string())


def make_arrow_function(source: str, digest: str, filename: str, entry_point: str, return_type: pa.DataType, named: str | None = None) -> Callable[..., pa.Array]:
    """The body of a scalar Arrow UDF for timed runs: argument arrays in, the output array out.

    This is how a job runs a vectorized candidate (`F.arrow_udf(function, return_type)`): only the
    arguments travel to Python and only the result comes back. No isolation of failing rows: a
    candidate that raises fails the run, as it would fail the job.
    """

    def function(*columns: pa.Array) -> pa.Array:
        watch.install([os.path.dirname(filename)])
        return run_on_arrow(getattr(candidate_module(source, digest, filename, named), entry_point), columns, return_type)

    return function


def make_arrow_aggregate(source: str, digest: str, filename: str, entry_point: str, return_type: pa.DataType, named: str | None = None) -> Callable[..., Any]:
    """The body of a grouped-aggregate Arrow UDF for timed runs: a group's argument arrays in, its one value out (as a job runs it)."""
    from aether_mcp.arrow_udf import aggregate_on_arrow

    def function(*columns: pa.Array) -> Any:
        watch.install([os.path.dirname(filename)])
        return aggregate_on_arrow(getattr(candidate_module(source, digest, filename, named), entry_point), columns, return_type)[0]

    return function


def _runs(columns: list[pa.Array], kept) -> list[list[pa.Array]]:
    """Each column's kept rows (`kept`, a boolean NumPy mask) as the slices of its runs of consecutive kept rows, for `arguments` to join."""
    import numpy as np

    edges = np.flatnonzero(np.diff(np.concatenate(([False], kept, [False])).astype(np.int8)))
    spans = list(zip(edges[::2].tolist(), edges[1::2].tolist())) or [(0, 0)]
    return [[column.slice(start, stop - start) for start, stop in spans] for column in columns]


def _outputs(evaluate, part: list[Any], return_type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """The candidate's outputs on `part` (its `arguments`) and no errors, or what it raised (a wrong number of values among it)."""
    return call(evaluate, part, return_type), pa.nulls(len(part[0]), pa.string())


class _Tally:
    """Rows resolved so far in one batch's isolation, and how many of them raised alone."""

    __slots__ = ("resolved", "raised")

    def __init__(self) -> None:
        self.resolved = self.raised = 0

    def dense(self) -> bool:
        """Whether rows that raise alone are so common here that trying each row once costs fewer calls than halving.

        Halving costs about 1.7 calls a row where half the rows raise, one call a row alone costs 1; it wins
        below about a third (group testing's threshold is 0.38). The estimate starts from one raised and one
        returned row, so a few early rows do not decide it.
        """
        return self.resolved >= DENSE_AFTER_ROWS and (self.raised + 1) / (self.resolved + 2) >= DENSE_FRACTION


DENSE_AFTER_ROWS = 8
DENSE_FRACTION = 0.3
_UNKNOWN = object()


class _Memo:
    """A batch's rows as keys into what rows did alone before (`alone`, this candidate's in this process).

    The isolation only attributes a batch's failure to rows: the outputs its parts return are never used
    (the rows that return take theirs from the call over them together, in _evaluate_batch). So a row that
    was called alone before is not called alone again: it raises what it raised, or returns. Every part of
    more rows is called as before, and so are each batch's own call and the call together. Each part gets its
    series afresh, as a job's call would get them (aether_mcp.arrow_udf.arguments), so for a candidate that depends only on
    its argument values what a row does alone depends only on that row, and a part's writes into its inputs
    reach no other call. (A write into the batch's own series is reported by the audit.) A row is keyed by its exact
    values, floats by their bits, null apart; a batch holding a type not keyed here is isolated by calls
    alone, as is every new row once about ALONE_BYTES_KEPT are kept.
    """

    __slots__ = ("batch", "alone", "keys")

    def __init__(self, batch: pa.RecordBatch, alone: _Alone) -> None:
        self.batch, self.alone, self.keys = batch, alone, None

    def known(self, start: int, stop: int) -> list[str | None] | None:
        """What the one row start..stop did alone, if it was called alone before; None: call it."""
        if stop - start != 1:
            return None
        if self.keys is None:
            self.keys = _row_keys(self.batch) or []
        outcome = self.alone.outcomes.get(self.keys[start], _UNKNOWN) if self.keys else _UNKNOWN
        return None if outcome is _UNKNOWN else [outcome]

    def record(self, row: int, outcome: str | None) -> None:
        if not self.keys:
            return
        key = self.keys[row]
        size = sys.getsizeof(key) + sum(sys.getsizeof(value) for value in key) + 100  # the key, its values, the dict's entry
        if outcome is not None and outcome not in self.alone.texts:
            size += sys.getsizeof(outcome) + 100  # the text, once, and its entry
        if self.alone.size + size <= ALONE_BYTES_KEPT:
            self.alone.outcomes[key] = None if outcome is None else self.alone.texts.setdefault(outcome, outcome)
            self.alone.size += size


def _row_keys(batch: pa.RecordBatch) -> list[tuple] | None:
    """Each row's argument values exactly (floats by their bits, null as None), or None if a column's type is not keyed here."""
    import numpy as np

    columns = []
    for column in batch.columns[1:]:
        kind = column.type
        if pa.types.is_float32(kind) or pa.types.is_float64(kind):
            width = np.uint32 if pa.types.is_float32(kind) else np.uint64
            data = column.buffers()[1]
            bits = np.frombuffer(data, dtype=width, count=column.offset + len(column))[column.offset :].tolist() if data is not None else [0] * len(column)
            columns.append([None if null else value for value, null in zip(bits, column.is_null().to_pylist())])
        elif any(check(kind) for check in (pa.types.is_integer, pa.types.is_boolean, pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_date32)):
            columns.append(column.to_pylist())
        else:
            return None
    return list(zip(*columns))


def _evaluate_isolating(evaluate, columns: list[pa.Array], return_type: pa.DataType, start: int, stop: int, tally: _Tally, memo: _Memo | None = None) -> tuple[pa.Array, pa.Array]:
    size = stop - start
    known = memo.known(start, stop) if memo is not None else None
    if known is not None:
        tally.resolved += size
        tally.raised += sum(outcome is not None for outcome in known)
        return pa.nulls(size, return_type), pa.array(known, pa.string())
    try:
        outputs = _outputs(evaluate, arguments([column.slice(start, size) for column in columns]), return_type)
        tally.resolved += size
        if size == 1 and memo is not None:
            memo.record(start, None)
        return outputs
    except CandidateImportError:
        raise
    except (watch.WatchRefused, watch.TripwireTriggered) as exc:
        # The watch refused what the candidate did, or it used the original: a finding of its own (recorded as an event)
        # that fails the audit whatever the rows return, so every row of the batch reports it. Bisecting would call the
        # candidate about twice per row, each call refused again (20,000 rows: about 15 s of refusals).
        return pa.nulls(size, return_type), pa.array([f"{type(exc).__name__}: {exc}"] * size, pa.string())
    except Exception as exc:
        if size == 1:
            tally.resolved += 1
            tally.raised += 1
            if memo is not None and not isinstance(exc, MemoryError):  # (it may not raise again)
                memo.record(start, f"{type(exc).__name__}: {exc}")
            return pa.nulls(1, return_type), pa.array([f"{type(exc).__name__}: {exc}"], pa.string())
        # each row once where most rows raise alone, else halves: either way every row ends in a part that returned or alone
        parts = [(row, row + 1) for row in range(start, stop)] if tally.dense() else [(start, start + size // 2), (start + size // 2, stop)]
        done = [_evaluate_isolating(evaluate, columns, return_type, first, last, tally, memo) for first, last in parts]
        return pa.concat_arrays([outputs for outputs, _ in done]), pa.concat_arrays([errors for _, errors in done])


def _evaluate_batch(
    evaluate, columns: list[pa.Array], series: list[Any], return_type: pa.DataType, on_failure: Callable[[], None] | None = None, memo: _Memo | None = None
) -> tuple[pa.Array, pa.Array]:
    """One Arrow batch (its argument `columns`, and `series`: them as the candidate gets them): outputs and errors per
    row, the rows that raise alone split off by halving (`memo`: see _Memo). Each part and the call over the rows that
    return together get their series afresh from `columns` (aether_mcp.arrow_udf.arguments).

    Halving finds the rows that raise on their own; the rows left must then return together, as
    they would in a job's batch without those rows. Where they do not (a candidate that fails on
    large batches, or on some rows side by side), every one of them raised: a job's batch holding
    them fails, so halving must not heal it into rows that look equal.
    """
    size = len(series[0])
    try:
        return _outputs(evaluate, series, return_type)
    except CandidateImportError:
        raise
    except Exception as exc:
        failure = exc
    if on_failure is not None:
        on_failure()
    # one row is its own failure; a refusal (see _evaluate_isolating) is reported on every row at once, not halved
    if size == 1 or isinstance(failure, (watch.WatchRefused, watch.TripwireTriggered)):
        return pa.nulls(size, return_type), pa.array([f"{type(failure).__name__}: {failure}"] * size, pa.string())
    middle, tally = size // 2, _Tally()
    left = _evaluate_isolating(evaluate, columns, return_type, 0, middle, tally, memo)
    right = _evaluate_isolating(evaluate, columns, return_type, middle, size, tally, memo)
    outputs, errors = pa.concat_arrays([left[0], right[0]]), pa.concat_arrays([left[1], right[1]])
    returned = errors.is_null().to_numpy(zero_copy_only=False)
    count = int(returned.sum())
    if count == 0:
        return outputs, errors
    if count < size:
        try:
            together, _ = _outputs(evaluate, arguments(_runs(columns, returned)), return_type)
            # The rows that return take their values from this call, the job's batch without the raising rows: the
            # parts they were isolated in (single rows, where most rows raise) are no batch a job gives them.
            positions = iter(range(count))
            return together.take(pa.array([next(positions) if ok else None for ok in returned], pa.int64())), errors
        except CandidateImportError:
            raise
        except Exception as exc:
            failure = exc
    where = f"on this batch of {size} rows, though no row of it raises alone" if count == size else f"on the {count} rows of this batch that return alone, together"
    why = f"{type(failure).__name__}: {failure} (raised {where}: a job's batch holding them fails)"
    return pa.nulls(size, return_type) if count == size else _null_where(outputs, returned, return_type), pa.array(
        [why if ok else error for ok, error in zip(returned, errors.to_pylist())], pa.string()
    )


def _null_where(outputs: pa.Array, mask, return_type: pa.DataType) -> pa.Array:
    """`outputs` with the masked positions null."""
    import pyarrow.compute as pc

    return pc.if_else(pa.array(mask, pa.bool_()), pa.nulls(len(outputs), return_type), outputs)


