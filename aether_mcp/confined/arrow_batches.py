"""Runs inside Spark's Python workers: feeds Arrow batches to a vectorized candidate and back.

Kept light (pandas, NumPy, pyarrow only) because every Python worker imports it. The candidate's
source travels inside the pickled mapper (by value), is compiled once per worker process and
cached by content hash, so an edited candidate is always the one that runs and the worker that
drives Spark never executes it.

Columns reach `evaluate(*series)` as the process's backend gives them (aether_mcp.backend: cuDF
Series on the GPU backend, converted from Arrow on the device). On the CPU backend, with null
and NaN kept apart: floating columns are pandas
`Float64`/`Float32` arrays whose mask marks only nulls (a NaN is a value), integers and booleans
are nullable `Int*`/`boolean`, strings are `string[python]` (Python str semantics). The returned
Series goes back the same way: a masked array's mask is the null mask, a NumPy float NaN stays
NaN, None and pd.NA are null.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from aether_mcp import backend
from aether_mcp.arrow_udf import run_on_arrow

ROW_ID = "__aether_row_id"
OUTPUT = "__aether_output"
ERROR = "__aether_error"
AUDIT = "__aether_audit"
IMPORT_FAILURE = "AETHER_CANDIDATE_IMPORT_FAILED"

_LOADED: dict[str, types.ModuleType] = {}


class CandidateImportError(RuntimeError):
    """The candidate module failed while being loaded in a Python worker."""


def candidate_module(source: str, digest: str, filename: str) -> types.ModuleType:
    """The candidate compiled from `source`, once per process and content hash."""
    module = _LOADED.get(digest)
    if module is not None:
        return module
    module = types.ModuleType(f"aether_candidate_{digest[:16]}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except BaseException as exc:
        del sys.modules[module.__name__]
        raise CandidateImportError(f"{IMPORT_FAILURE}: {exc.__class__.__name__}: {exc}") from exc
    _LOADED[digest] = module
    return module


def make_mapper(
    source: str,
    digest: str,
    filename: str,
    entry_point: str,
    return_type: pa.DataType,
    audit_workspace: str | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A mapInArrow function: (row id, args...) batches in, (row id, output, error) batches out.

    A batch on which the candidate raises is split in this process until each failure is one
    row, so one bad row costs no failed Spark job; its error column says what was raised. With
    `audit_workspace`, the candidate is loaded and run under a watch (see candidate_audit) and each
    batch carries a report in an extra column.
    """

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        load_events: list[str] = []
        if audit_workspace is None:
            module = candidate_module(source, digest, filename)
        else:
            from aether_mcp.confined import watch as candidate_audit

            candidate_audit.install(audit_workspace)
            with candidate_audit.Watch(filename) as loading:
                module = candidate_module(source, digest + ":audit", filename)
            load_events = loading.events
        evaluate = getattr(module, entry_point)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            series = [backend.from_arrow(batch.column(i)) for i in range(1, batch.num_columns)]
            if audit_workspace is None:
                outputs, errors = _evaluate_isolating(evaluate, series, return_type, 0, batch.num_rows)
                yield pa.RecordBatch.from_arrays([batch.column(0), outputs, errors], names=[ROW_ID, OUTPUT, ERROR])
                continue
            before = candidate_audit.checksum(series)
            kernels = candidate_audit.kernel_code(module)
            with candidate_audit.Watch(filename, kernels) as watch:
                outputs, errors = _evaluate_isolating(evaluate, series, return_type, 0, batch.num_rows)
            events = load_events + watch.events
            counted, rows = watch, batch.num_rows
            if errors.null_count < batch.num_rows:
                # Rows that raise were isolated by bisection, which calls the candidate many times;
                # Python work per row is counted on one call over the rows that succeed.
                ok = errors.is_null().to_numpy(zero_copy_only=False)
                clean = [s[ok].reset_index(drop=True) for s in series]
                with candidate_audit.Watch(filename, kernels) as counted:
                    try:
                        evaluate(*clean)
                    except Exception:
                        pass  # the outputs above stand; this run only counts calls
                events += counted.events
                rows = int(ok.sum())
            report = {
                "rows": rows,
                "calls": counted.calls,
                "events": events,
                "inputs_changed": candidate_audit.checksum(series) != before,
                "threads_left": watch.threads_left,
                "children_left": watch.children_left,
            }
            load_events = []
            audit = pa.array([json.dumps(report)] + [None] * (batch.num_rows - 1), pa.string())
            yield pa.RecordBatch.from_arrays([batch.column(0), outputs, errors, audit], names=[ROW_ID, OUTPUT, ERROR, AUDIT])

    return mapper


def make_arrow_function(source: str, digest: str, filename: str, entry_point: str, return_type: pa.DataType) -> Callable[..., pa.Array]:
    """The body of a scalar Arrow UDF for timed runs: argument arrays in, the output array out.

    This is how a job runs a vectorized candidate (`F.arrow_udf(function, return_type)`): only the
    arguments travel to Python and only the result comes back. No isolation of failing rows: a
    candidate that raises fails the run, as it would fail the job.
    """

    def function(*columns: pa.Array) -> pa.Array:
        return run_on_arrow(getattr(candidate_module(source, digest, filename), entry_point), columns, return_type)

    return function


def _evaluate_isolating(evaluate, series: list[pd.Series], return_type: pa.DataType, start: int, stop: int) -> tuple[pa.Array, pa.Array]:
    size = stop - start
    try:
        part = series if start == 0 and stop == len(series[0]) else [s.iloc[start:stop] for s in series]
        result = evaluate(*part)
        if len(result) != size:
            raise ValueError(f"evaluate returned {len(result)} values for a batch of {size} rows")
        return backend.to_arrow(result, return_type), pa.nulls(size, pa.string())
    except CandidateImportError:
        raise
    except Exception as exc:
        if size == 1:
            return pa.nulls(1, return_type), pa.array([f"{type(exc).__name__}: {exc}"], pa.string())
        middle = start + size // 2
        left = _evaluate_isolating(evaluate, series, return_type, start, middle)
        right = _evaluate_isolating(evaluate, series, return_type, middle, stop)
        return pa.concat_arrays([left[0], right[0]]), pa.concat_arrays([left[1], right[1]])


