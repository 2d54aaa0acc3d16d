"""Find a Python UDF in a PySpark job's source and extract it, with exactly what it needs.

The source is parsed with `ast` and never imported or run. Recognised forms:
`@udf`, `@udf(...)`, `@F.udf(...)`, `@pandas_udf(...)` on a function; `name = udf(fn, type)`
(a function or a lambda); `spark.udf.register("name", fn, type)`, positional or by keyword;
`name = make_udf(40.7, "x")`, a module-level factory that returns a UDF, called with literals
(the factory travels without its UDF wrapper, and the job's call binds it); return types as DDL
strings or `DataType()` expressions (directly or through a module constant). The extracted
module holds the module-level imports (star imports included), constants, helpers and classes
the UDF uses, transitively, and nothing else; UDF decorators are dropped so the module is plain
Python. A name the job defines nowhere is kept as it is, so it raises where the job would.

One module per concern: `definitions` (what is found and returned), `finder`, `factories`,
`pandas_forms`, `slicing` (the extracted module), `arguments` (parameters and literal arguments), `local_modules`
(the job's own modules) and `check` (the extracted module checked against the job it came from).
"""

from __future__ import annotations

from aether_mcp.extraction.arguments import literal_arguments
from aether_mcp.extraction.definitions import (
    SPARK_STATE_MARKERS,
    UDF_FACTORIES,
    ExtractedUdf,
    ImportedName,
    LiteralDomain,
    UdfArgument,
    UdfDefinition,
    hint_to_type,
    imported_module,
    imported_name,
    read_source,
)
from aether_mcp.extraction.finder import SEMANTIC_CONF_PREFIXES, find_spark_conf, find_udfs, select_udf
from aether_mcp.extraction.pandas_forms import FRAME_FUNCTION_METHODS, PANDAS_EVAL_TYPES, PANDAS_FUNCTION_TYPES
from aether_mcp.extraction.slicing import extract_udf, udf_module

__all__ = [
    "ExtractedUdf",
    "FRAME_FUNCTION_METHODS",
    "ImportedName",
    "LiteralDomain",
    "PANDAS_EVAL_TYPES",
    "PANDAS_FUNCTION_TYPES",
    "SEMANTIC_CONF_PREFIXES",
    "SPARK_STATE_MARKERS",
    "UDF_FACTORIES",
    "UdfArgument",
    "UdfDefinition",
    "extract_udf",
    "find_spark_conf",
    "find_udfs",
    "hint_to_type",
    "imported_module",
    "imported_name",
    "literal_arguments",
    "read_source",
    "select_udf",
    "udf_module",
]
