"""`python -m aether_mcp.confined.original_check REQUEST.json`: load the extracted original and run it on a few rows.

init_workspace's proof that the extraction kept what the UDF needs. The module is compiled from
the verified bytes of original/udf.py and the function called on each generated row (a pandas
UDF on whole Series, a struct argument as a DataFrame), as plain Python, with structs as the Rows
Spark gives a Python UDF. What comes back is only what an extraction can break: an
import that fails, and the names a NameError named, with how many rows raised it and which of
the job's star-imported modules (if any) would have provided each. Every other exception is the
UDF's own behaviour and is counted, not judged.

Kept light on purpose (no Spark, pandas only for a pandas UDF): it runs at every init_workspace.
"""

from __future__ import annotations

import json
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    from aether_mcp.confined import result_file

    result_file.finish(request["result"], check(request))


def check(request: dict[str, Any]) -> dict[str, Any]:
    from aether_mcp.evaluation.pandas_forms import group_columns, per_batch
    from aether_mcp.nested_values import as_udf_argument, pandas_argument
    from aether_mcp.wire import value_codec

    module = types.ModuleType("aether_original_check")
    module.__file__ = request["original"]["filename"]
    sys.modules[module.__name__] = module
    try:
        exec(compile(request["original"]["source"], module.__file__, "exec", dont_inherit=True), module.__dict__)
    except Exception as exc:
        return {"load_error": f"{exc.__class__.__name__}: {exc}", **_cause(exc)}
    function = getattr(module, request["function"], None)
    if not callable(function):
        return {"load_error": f"original/udf.py does not define {request['function']}()"}
    rows = value_codec.loads(request["rows"])
    if request["kind"] == "pandas" and rows:
        function = per_batch(function, request.get("pandas_form"), len(rows[0]))
    names: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    other: Counter[str] = Counter()

    def call(*args: Any) -> None:
        try:
            function(*args)
        except NameError as exc:
            names[exc.name or str(exc)] += 1
        except ImportError as exc:
            modules[exc.name or str(exc)] += 1
        except Exception as exc:  # the UDF's own behaviour on a generated row
            other[exc.__class__.__name__] += 1

    if request.get("pandas_form") == "aggregate":
        for row in rows:  # one group a row
            group = group_columns(row)
            if group is not None:
                call(*[pandas_argument(values) for values in group])
    elif request["kind"] == "pandas":
        call(*[pandas_argument(list(column)) for column in zip(*rows)] if rows else [])
    else:
        for row in rows:
            call(*[as_udf_argument(value) for value in row])
    return {
        "rows": len(rows), "name_errors": dict(names), "import_errors": dict(modules), "other_errors": dict(other),
        "star_provided": {name: _star_provider(name, request.get("star_imports") or []) for name in names},
    }


def _cause(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ImportError):
        return {"missing_module": exc.name}
    if isinstance(exc, NameError):
        return {"missing_name": exc.name}
    return {}


def _star_provider(name: str, modules: list[str]) -> str | None:
    """Which star-imported module gives `name` (as `from module import *` would), if any."""
    import importlib

    for module in modules:
        try:
            imported = importlib.import_module(module)
        except Exception:  # the module's own failure shows up as the import error it is
            continue
        exported = getattr(imported, "__all__", None)
        if (name in exported) if exported is not None else (hasattr(imported, name) and not name.startswith("_")):
            return module
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
