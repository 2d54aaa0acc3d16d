"""Pandas UDFs' forms: Series to Series, iterator of Series, Series to a scalar per group, read from the function type or the hints."""

from __future__ import annotations

import ast

from aether_mcp.extraction.definitions import last_name

# PandasUDFType names and values (pyspark.rdd.PythonEvalType) -> the form; None: not a column UDF at all.
PANDAS_FUNCTION_TYPES = {"SCALAR": "scalar", "SCALAR_ITER": "iterator", "GROUPED_AGG": "aggregate", "GROUPED_MAP": None, "MAP_ITER": None}


PANDAS_EVAL_TYPES = {200: "SCALAR", 204: "SCALAR_ITER", 202: "GROUPED_AGG", 201: "GROUPED_MAP", 205: "MAP_ITER"}


# DataFrame methods that take a plain function of pandas/Arrow frames rather than a column UDF.
FRAME_FUNCTION_METHODS = ("applyInPandas", "mapInPandas", "applyInArrow", "mapInArrow", "applyInPandasWithState", "transformWithStateInPandas")


def read_pandas_form(function_type: ast.expr | None, function, line: int) -> tuple[str | None, str | None]:
    """(the pandas UDF's form, None) or (None, why it cannot be taken), read from functionType, else from hints as Spark reads them."""
    name = None
    if function_type is not None:
        literal = function_type.value if isinstance(function_type, ast.Constant) else None
        name = PANDAS_EVAL_TYPES.get(literal) if isinstance(literal, int) else literal if isinstance(literal, str) else last_name(function_type)
        if name not in PANDAS_FUNCTION_TYPES:
            return None, f"cannot read the pandas UDF type {ast.unparse(function_type)!r} at line {line}; write PandasUDFType.SCALAR or SCALAR_ITER, or use type hints."
    elif isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        hints = [a.annotation for a in function.args.args]
        returns = last_name(_outer(function.returns)) if function.returns is not None else None
        if hints and hints[0] is not None and last_name(_outer(hints[0])) == "Iterator":
            name = "SCALAR_ITER" if returns in (None, "Iterator") else "GROUPED_AGG"
        elif function.returns is not None and all(h is not None for h in hints) and last_name(_outer(function.returns)) not in ("Series", "DataFrame", "Iterator"):
            name = "GROUPED_AGG"  # Series (or an iterator of them) to a scalar
    form = PANDAS_FUNCTION_TYPES.get(name or "SCALAR")
    if form is None:
        return None, (
            f"unsupported UDF form at line {line}: {name} pandas UDFs take and return whole frames, not column values; aether-mcp converts "
            "scalar (Series to Series), iterator (Iterator[Series] to Iterator[Series]) and Series-to-scalar pandas UDFs."
        )
    if form == "aggregate" and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.args.args and last_name(_outer(function.args.args[0].annotation)) == "Iterator":
        return None, (
            f"unsupported UDF form at line {line}: an iterator aggregation (Iterator[pd.Series] to a scalar); aether-mcp takes Series-to-scalar "
            "aggregations, scalar and iterator pandas UDFs, and row UDFs."
        )
    return form, None


def _outer(annotation: ast.expr) -> ast.expr:
    """`Iterator` of `Iterator[pd.Series]`; a string annotation parsed first."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation.value if isinstance(annotation, ast.Subscript) else annotation


def iterator_columns(function: ast.FunctionDef) -> list[str]:
    """Column names of an iterator pandas UDF: its loop's target names (`for a, b in batches`), else batches_0, batches_1..."""
    param = function.args.args[0]
    annotation = param.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    element = annotation.slice if isinstance(annotation, ast.Subscript) else None
    count = len(element.slice.elts) if isinstance(element, ast.Subscript) and last_name(element.value) == "Tuple" and isinstance(element.slice, ast.Tuple) else 1
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name) and node.iter.id == param.arg:
            names = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
            if annotation is None:
                count = len(names)  # no hint: the loop unpacks one Series per column
            if len(names) == count and all(isinstance(n, ast.Name) for n in names):
                return [n.id for n in names]
    return [param.arg] if count == 1 else [f"{param.arg}_{i}" for i in range(count)]
