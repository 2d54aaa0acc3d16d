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
# Parts of allowed packages that read or write files, load native code or evaluate strings: a UDF needs none of them.
DENIED_SUBMODULES = (
    "numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "numpy.testing", "numpy.lib.npyio", "numpy.lib._npyio_impl",
    "numpy.lib.format", "numpy.lib._datasource", "pandas.io", "pandas.testing", "pandas.core.computation",
    "pyarrow.fs", "pyarrow._fs", "pyarrow.dataset", "pyarrow._dataset", "pyarrow.parquet", "pyarrow._parquet",
    "pyarrow.csv", "pyarrow._csv", "pyarrow.json", "pyarrow._json", "pyarrow.feather", "pyarrow.orc", "pyarrow._orc",
    "pyarrow.flight", "pyarrow._flight", "pyarrow.jvm", "pyarrow.cffi", "pyarrow.util", "pyarrow.ipc", "pyarrow.substrait",
    "pyarrow._hdfs", "pyarrow._s3fs", "pyarrow._gcsfs", "pyarrow._azurefs", "scipy.io", "scipy.datasets", "numba.misc",
    "pandas.compat.pickle_compat", "numba.cloudpickle", "numba.core.serialize", "numba.extending", "numba.core.extending",
    "numba.core.unsafe", "numba.core.typing.ctypes_utils", "numba.core.typing.cffi_utils", "numba.experimental",
    "numba.core.sigutils", "numba.testing",
)  # fmt: skip


def allowed(name: str) -> bool:
    """Whether importing module `name` (or `package.name` of a from-import) is on the allow-list."""
    if any(name == denied or name.startswith(denied + ".") for denied in DENIED_SUBMODULES):
        return False
    if name.split(".")[0] in ALLOWED_TOP_LEVEL:
        return True
    return any(name == dotted or name.startswith(dotted + ".") for dotted in ALLOWED_DOTTED)


def allowed_while_running(name: str) -> bool:
    """The watch's view: importing a parent package (`pyspark.sql` for `from pyspark.sql import functions`) is fine."""
    return allowed(name) or name in ALLOWED_PARENTS
