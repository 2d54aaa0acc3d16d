"""What a candidate may import: the libraries whose behaviour the judge knows, and nothing of the harness.

One list for the static rule (import statements) and the watch (imports a running candidate makes).
"""

from __future__ import annotations

ALLOWED_TOP_LEVEL = frozenset(
    {
        "numpy", "pandas", "pyarrow", "math", "cmath", "re", "decimal", "datetime", "unicodedata", "string", "functools",
        "itertools", "operator", "collections", "typing", "dataclasses", "enum", "fractions", "statistics", "numbers",
        "calendar", "zoneinfo", "time", "struct", "array", "bisect", "heapq", "copy", "abc", "warnings", "textwrap",
        "html", "json", "hashlib", "base64", "binascii", "zlib", "uuid", "random", "__future__", "cupy", "cupyx", "cudf",
        "numba", "rmm", "scipy", "pylibcudf",
    }
)
# Dotted names allowed where their package is not (the package itself may be named as a parent).
ALLOWED_DOTTED = (
    "aether_mcp.backend",
    "pyspark.sql.functions",
    "pyspark.sql.types",
    "pyspark.sql.column",
    "pyspark.sql.window",
    "pyspark.sql.Column",
    "pyspark.sql.Window",
)
ALLOWED_PARENTS = frozenset({"aether_mcp", "pyspark", "pyspark.sql"})


def allowed(name: str) -> bool:
    """Whether importing module `name` (or `package.name` of a from-import) is on the allow-list."""
    if name.split(".")[0] in ALLOWED_TOP_LEVEL:
        return True
    return any(name == dotted or name.startswith(dotted + ".") for dotted in ALLOWED_DOTTED)


def allowed_while_running(name: str) -> bool:
    """The watch's view: importing a parent package (`pyspark.sql` for `from pyspark.sql import functions`) is fine."""
    return allowed(name) or name in ALLOWED_PARENTS
