"""A pandas UDF's form, kept as the job declares it: Series to Series, Iterator[Series] to Iterator[Series], or Series to a scalar.

Spark runs a scalar iterator UDF once per partition with an iterator of its Arrow batches (a tuple
of Series per batch for several columns) and takes one output Series per batch; it runs an
aggregation once per group of groupBy().agg(), with the group's values as Series. `for_spark`
wires the original that way, with the type hints pandas_udf reads the form from; `per_batch` makes
the same function one of a batch's Series, for plain-Python runs (coverage, mutants, the init
check, micro-benchmarks): the iterator is fed that one batch. Light: pandas and typing only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from aether_mcp.lazy_import import lazy_module

pd = lazy_module("pandas")


EMPTY_GROUP_TYPE = "EmptyGroup"
EMPTY_GROUP_MESSAGE = "no group: a null or empty argument array holds no values, so Spark never calls an aggregation on it"


def group_columns(row: list[Any]) -> list[list[Any]] | None:
    """An aggregation's row as its group's columns, zipped as Spark's arrays_zip zips them (shorter ones padded with nulls); None: no group."""
    if any(values is None for values in row):
        return None
    size = max((len(values) for values in row), default=0)
    if size == 0:
        return None
    return [list(values) + [None] * (size - len(values)) for values in row]


def per_batch(function: Callable[..., Any], form: str | None, arity: int) -> Callable[..., Any]:
    """`function` as a function of one batch's Series (itself, for a Series-to-Series UDF or an aggregation's group)."""
    if form != "iterator":
        return function

    def batch(*series: pd.Series) -> pd.Series:
        fed = iter([series if arity > 1 else series[0]])
        outputs = list(function(fed))
        if not outputs:
            raise ValueError("the iterator pandas UDF yielded nothing for a batch")
        return outputs[0] if len(outputs) == 1 else pd.concat(outputs, ignore_index=True)

    return batch


def for_spark(function: Callable[..., Any], form: str | None, arity: int) -> Callable[..., Any]:
    """A function pandas_udf types as the job's UDF: plain Series to Series, or a scalar iterator with hints that say so."""
    if form == "aggregate":

        def aggregate(*series: pd.Series) -> float:
            return function(*series)

        # Series in, a scalar out: what pandas_udf reads as a grouped aggregation
        aggregate.__annotations__ = {**{f"column_{i}": pd.Series for i in range(arity)}, "return": float}
        aggregate.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(f"column_{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=pd.Series) for i in range(arity)], return_annotation=float
        )
        return aggregate
    if form != "iterator":

        def evaluate(*series: pd.Series) -> pd.Series:
            return function(*series)

        return evaluate

    def evaluate_batches(batches):
        yield from function(batches)

    element = pd.Series if arity == 1 else tuple[(pd.Series,) * arity]  # type: ignore[misc]
    evaluate_batches.__annotations__ = {"batches": Iterator[element], "return": Iterator[pd.Series]}
    return evaluate_batches
