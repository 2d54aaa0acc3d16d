"""`python -m aether_mcp.confined.micro_bench REQUEST.json`: time a candidate's entry point against the original.

Both get the same rows in the form Spark hands them over: the candidate whole columns as
arrow_batches builds them (null and NaN apart), a row UDF original one Python value per
argument per row, a pandas UDF original whole pandas Series. One warm-up call each, then the
two alternate for `repeats` rounds. On the GPU backend (AETHER_BACKEND=gpu) columns go to the device as cuDF Series first, as Spark's
batches do, and device work is synchronized before the clock stops.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from aether_mcp import backend
from aether_mcp.confined import result_file


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    out = Path(request["result"])
    try:
        result = _profile(request) if request.get("profile") else _run(request)
    except Exception as exc:  # the candidate's failure, reported to the server as data
        result = {"error": f"{exc.__class__.__name__}: {exc}"[:1000]}
    result_file.finish(out, result)


def _run(request: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from aether_mcp.evaluation.pandas_forms import per_batch
    from aether_mcp.nested_values import arrow_values, as_udf_argument
    from aether_mcp.reference.original import original_function

    config = _config(request)
    table = pq.read_table(request["data"])
    original = original_function(config, request["original"]["source"], request["original"]["filename"])
    evaluate = _candidate(request).evaluate
    series = [backend.from_arrow(column.combine_chunks()) for column in table.columns]
    raised = [0]
    if config.udf.pandas_form == "aggregate":
        run_original, run_candidate = _per_group(config, table, original, evaluate)
        return _timed(request, run_original, run_candidate, raised)
    if config.udf.kind == "pandas":
        zone = config.spark.conf.get("spark.sql.session.timeZone", "UTC")
        pandas_args = [_pandas_argument(column, arg.type, zone) for column, arg in zip(table.columns, config.udf.args)]

        batch_original = per_batch(original, config.udf.pandas_form, len(config.udf.args))

        def run_original() -> None:
            batch_original(*pandas_args)
    else:
        rows = list(zip(*[[as_udf_argument(value) for value in arrow_values(column)] for column in table.columns]))

        def run_original() -> None:
            failures = 0
            for row in rows:
                try:
                    original(*row)
                except Exception:
                    failures += 1
            raised[0] = failures

    synchronize = backend.synchronize

    def run_candidate() -> None:
        evaluate(*series)
        synchronize()

    return _timed(request, run_original, run_candidate, raised)


def _arrow_groups(table: Any) -> list[list[Any]]:
    """An aggregation's data as its groups: per row (its arrays zipped as Spark zips them), one Arrow array per column."""
    import pyarrow as pa

    from aether_mcp.evaluation.pandas_forms import group_columns

    groups = [group for group in (group_columns(list(row)) for row in zip(*[column.to_pylist() for column in table.columns])) if group is not None]
    return [[pa.array(values, type=column.type.value_type) for values, column in zip(group, table.columns)] for group in groups]


def _per_group(config: Any, table: Any, original: Any, evaluate: Any) -> tuple[Any, Any]:
    """An aggregation's original and candidate, each called once per group (a row of the data, its arrays zipped)."""
    zone = config.spark.conf.get("spark.sql.session.timeZone", "UTC")
    element_types = [arg.type.removeprefix("array<").removesuffix(">") for arg in config.udf.args]
    arrow_groups = _arrow_groups(table)
    originals = [[_pandas_argument(values, kind, zone) for values, kind in zip(group, element_types)] for group in arrow_groups]
    candidates = [[backend.from_arrow(values) for values in group] for group in arrow_groups]

    def run_original() -> None:
        for columns in originals:
            try:
                original(*columns)
            except Exception:
                pass  # a group the original raises on costs what it costs

    def run_candidate() -> None:
        for columns in candidates:
            try:
                evaluate(*columns)
            except Exception:
                pass
        backend.synchronize()

    return run_original, run_candidate


def _timed(request: dict[str, Any], run_original: Any, run_candidate: Any, raised: list[int]) -> dict[str, Any]:
    run_original()
    run_candidate()
    timings: dict[str, list[float]] = {"original": [], "candidate": []}
    for _ in range(request["repeats"]):
        for name, call in (("original", run_original), ("candidate", run_candidate)):
            started = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - started)
    return {**timings, "original_raised_rows": raised[0], "backend": backend.name(), "allocator": backend.allocator(), "device": backend.device_info()}


def _pandas_argument(column: Any, type_text: str, zone: str) -> Any:
    """A column as Spark hands it to a pandas UDF: for nested types, through PySpark's own conversion
    (a struct as a DataFrame, one column per field; a map as dicts)."""
    from aether_mcp.spark_types import parse_type

    data_type = parse_type(type_text)
    if data_type.typeName() not in ("array", "map", "struct"):
        return column.to_pandas()
    from pyspark.sql.conversion import ArrowArrayToPandasConversion

    return ArrowArrayToPandasConversion.convert(column, data_type, timezone=zone, struct_in_pandas="dict", df_for_struct=True)


def _profile(request: dict[str, Any]) -> dict[str, Any]:
    """The candidate's evaluate(*series) alone, profiled: under cProfile ("cpu"), in NVTX ranges for nsys ("nsys"), or recorded by CUPTI ("cupti").

    For nsys and cupti the record covers the columns' conversion to the device, the warm-up call
    and `repeats` more, as nsys records the whole process; cupti writes `cupti_trace.json` into
    the scratch folder.
    """
    import contextlib
    import cProfile
    import pstats

    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_type

    from aether_mcp.spark_types import parse_type

    config = _config(request)
    table = pq.read_table(request["data"])
    source_path = request["candidate"]["filename"]
    evaluate = _candidate(request).evaluate
    if config.udf.pandas_form == "aggregate":
        evaluate = _each_group(evaluate, _arrow_groups(table))
    recording = contextlib.ExitStack()
    recorder: dict[str, Any] = {}
    if request["profile"] == "cupti":
        import gc

        from aether_mcp.parsers import device_counters

        gc.disable()  # no finalizer of candidate garbage runs between the trace's export and its digest

        try:
            recorder = recording.enter_context(device_counters.cupti_recording(Path(request["scratch"]) / "cupti_trace.json"))
        except device_counters.CountersUnavailable as exc:
            return {"counters_unavailable": f"CUPTI cannot record here: {exc}"}
    with recording:
        began = time.perf_counter()
        series = [backend.from_arrow(column.combine_chunks()) for column in table.columns]  # to the device, as Spark's batches go
        synchronize = backend.synchronize
        result = evaluate(*series)  # warm-up: imports, caches and compilation stay out of the timing
        synchronize()
        result_bytes = backend.to_arrow(result, to_arrow_type(parse_type(config.udf.return_type))).nbytes
        measured = {
            "data_bytes": table.nbytes, "result_bytes": result_bytes, "candidate_file": str(source_path), "backend": backend.name(),
            "allocator": backend.allocator(), "device": backend.device_info(),
        }
        if request["profile"] in ("nsys", "cupti"):
            ranges = _nvtx_range()
            repeats = int(request.get("repeats", 3))
            started = time.perf_counter()
            for _ in range(repeats):
                with ranges("aether:evaluate"):
                    evaluate(*series)
                    synchronize()
            ended = time.perf_counter()
    if request["profile"] in ("nsys", "cupti"):
        return {**measured, **recorder, "wall_s": (ended - started) / repeats, "profiled_s": ended - began}
    started = time.perf_counter()
    evaluate(*series)
    unprofiled = time.perf_counter() - started
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    evaluate(*series)
    profiler.disable()
    profiled = time.perf_counter() - started
    scratch = Path(request["scratch"])
    profiler.dump_stats(str(scratch / "profile.pstats"))
    with open(scratch / "profile.txt", "w", encoding="utf-8") as handle:
        pstats.Stats(profiler, stream=handle).sort_stats("tottime").print_stats(60)
    functions = []
    for (file, line, function), (_primitive, calls, own, cumulative, _callers) in pstats.Stats(profiler).stats.items():
        functions.append({"function": function, "file": file, "line": line, "calls": calls, "own_s": own, "cumulative_s": cumulative})
    return {**measured, "wall_s": unprofiled, "profiled_wall_s": profiled, "functions": functions}


def _each_group(evaluate: Any, groups: list[list[Any]]) -> Any:
    """An aggregation's evaluate as one call over the data: once per group, its columns converted as Spark hands them over."""
    import pandas as pd

    def evaluate_groups(*_columns: Any) -> Any:
        return pd.Series([evaluate(*[backend.from_arrow(values) for values in group]) for group in groups])

    return evaluate_groups


def _config(request: dict[str, Any]):
    from aether_mcp.workspace import WorkspaceConfig

    return WorkspaceConfig.model_validate(request["config"])


def _candidate(request: dict[str, Any]):
    """The candidate module from the source the server read, loaded with the watch already in place."""
    import hashlib
    import os

    from aether_mcp.confined import arrow_batches, watch

    candidate = request["candidate"]
    watch.install([os.path.dirname(candidate["filename"])])
    named = f"{request['config']['udf']['name']}_{request['target'].removeprefix('candidate:')}"  # as the job names it
    return arrow_batches.candidate_module(candidate["source"], hashlib.sha256(candidate["source"].encode()).hexdigest(), candidate["filename"], named)


def _nvtx_range():
    """nvtx.annotate where the nvtx package is installed (it comes with cuDF); a no-op otherwise."""
    import contextlib

    try:
        import nvtx

        return lambda name: nvtx.annotate(name)
    except ImportError:
        return lambda name: contextlib.nullcontext()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
