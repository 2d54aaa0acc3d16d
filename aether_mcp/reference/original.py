"""The original UDF, made from the exact bytes the server checked, wired as the job wires it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql import types as T

from aether_mcp.evaluation.pandas_forms import for_spark, per_batch
from aether_mcp.evaluation.source_modules import digest, module_from_source
from aether_mcp.evaluation.target_evaluation import OUTPUT, ROW_ID, LoadedTarget, TargetError, group_rows, is_grouped
from aether_mcp.spark_types import parse_type


def original_function(config: Any, source: str, filename: str) -> Callable[..., Any]:
    """The job's UDF function, compiled from `source` (the verified bytes of original/udf.py)."""
    try:
        module = module_from_source(source, filename, "aether_original")
    except Exception as exc:
        raise TargetError(f"original/udf.py failed to import: {exc.__class__.__name__}: {exc}") from exc
    function = getattr(module, config.udf.function, None)
    if not callable(function):
        raise TargetError(f"original/udf.py does not define {config.udf.function}()")
    return function


def load_original(config: Any, source: str, filename: str) -> LoadedTarget:
    """The original as a Spark transformation: a Python UDF with the job's transport, or a pandas UDF."""
    function = original_function(config, source, filename)
    return_type = parse_type(config.udf.return_type)
    if config.udf.kind == "pandas":
        # The same Series the UDF gets, in the job's form; a batch that raises is split to single rows inside the probe.
        form, arity = config.udf.pandas_form, len(config.udf.args)
        kind, udf = "pandas", F.pandas_udf(for_spark(function, form, arity), return_type)
        probe_udf = F.pandas_udf(_raising_batch_probe(per_batch(function, form, arity)), T.StringType())
    else:
        # Same transport as the UDF itself, so the probe sees exactly the values the UDF sees.
        kind, udf = "row", F.udf(function, return_type, useArrow=config.udf.use_arrow)
        probe_udf = F.udf(_raising_probe(function), T.StringType(), useArrow=config.udf.use_arrow)
    if is_grouped(config):
        # once per group, as groupBy().agg() calls it; a group that raises is found by splitting the rows
        return LoadedTarget("original", kind, lambda frame, cols: group_rows(frame, config).groupBy(ROW_ID).agg(udf(*cols).alias(OUTPUT)), digest(source))
    return LoadedTarget(
        "original",
        kind,
        lambda frame, cols: frame.select(ROW_ID, udf(*cols).alias(OUTPUT)),
        digest(source),
        probe=lambda frame, cols: frame.select(ROW_ID, probe_udf(*cols).alias(OUTPUT)),
    )


def _raising_probe(function: Callable[..., Any]) -> Callable[..., str | None]:
    def probe(*args: Any) -> str | None:
        try:
            function(*args)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    return probe


def _raising_batch_probe(function: Callable[..., Any]) -> Callable[..., pd.Series]:
    """A pandas UDF body naming, per row, what the original raised: the whole batch first, then row by row."""

    def probe(*series: pd.Series) -> pd.Series:
        size = len(series[0]) if series else 0
        try:
            result = function(*series)
            if len(result) == size:
                return pd.Series([None] * size, dtype=object)
        except Exception:
            pass
        errors: list[str | None] = []
        for position in range(size):
            try:
                function(*(s.iloc[position : position + 1].reset_index(drop=True) for s in series))
                errors.append(None)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        return pd.Series(errors, dtype=object)

    return probe
