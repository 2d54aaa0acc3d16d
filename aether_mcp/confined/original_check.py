"""`python -m aether_mcp.confined.original_check REQUEST.json`: load the extracted original and run it on a few rows.

init_workspace's proof that the extraction kept what the UDF needs. The module is compiled from
the verified bytes of original/udf.py and the function called on each generated row (a pandas
UDF on whole Series), as plain Python. What comes back is only what an extraction can break: an
import that fails, and the names a NameError named, with how many rows raised it and which of
the job's star-imported modules (if any) would have provided each. Every other
exception is the UDF's own behaviour and is counted, not judged.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    Path(request["result"]).write_text(json.dumps(check(request)), encoding="utf-8")
    return 0


def check(request: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from aether_mcp.evaluation.target_evaluation import TargetError
    from aether_mcp.reference.original import original_function
    from aether_mcp.workspace import WorkspaceConfig

    config = WorkspaceConfig.model_validate(request["config"])
    try:
        function = original_function(config, request["original"]["source"], request["original"]["filename"])
    except TargetError as exc:
        return {"load_error": str(exc), **_cause(exc.__cause__)}
    table = pq.read_table(request["data"])
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

    if config.udf.kind == "pandas":
        call(*[column.to_pandas() for column in table.columns])
    else:
        for row in zip(*[column.to_pylist() for column in table.columns]):
            call(*row)
    return {
        "rows": table.num_rows, "name_errors": dict(names), "import_errors": dict(modules), "other_errors": dict(other),
        "star_provided": {name: _star_provider(name, request.get("star_imports") or []) for name in names},
    }


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


def _cause(cause: BaseException | None) -> dict[str, Any]:
    if isinstance(cause, ImportError):
        return {"missing_module": cause.name}
    if isinstance(cause, NameError):
        return {"missing_name": cause.name}
    return {}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
