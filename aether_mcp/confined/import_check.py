"""apply_conversion's import check: `python -m aether_mcp.confined.import_check REQUEST.json`, run confined.

Writes the converted job and the candidate's module into this process's scratch folder, puts it
first on the path (then the job's own folder, for the job's sibling modules), makes starting
Spark an error, and imports the converted job as a module. Importing a job must not start Spark
(its work belongs under `if __name__ == "__main__":` or in functions); a job that does is
reported, as is any import error.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from pathlib import Path

from aether_mcp.confined import result_file


class SparkStarted(RuntimeError):
    pass


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    folder = Path(request["scratch"]) / "job"
    folder.mkdir()
    for name, text in request["files"].items():
        (folder / name).write_text(text, encoding="utf-8")
    sys.path[:0] = [str(folder), request["job_dir"]]
    _forbid_spark()
    try:
        spec = importlib.util.spec_from_file_location("aether_converted_job", folder / request["main"])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = {"imported": True}
    except SparkStarted as exc:
        result = {"imported": False, "error": f"importing it starts Spark ({exc}); keep the job's Spark work under `if __name__ == \"__main__\":` or in functions"}
    except BaseException as exc:  # any failure of the job's or the candidate's module-level code
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if f.filename.startswith(str(folder))), "")
        result = {"imported": False, "error": f"{exc.__class__.__name__}: {str(exc)[:400]}" + (f" (at {where})" if where else "")}
    result_file.finish(request["result"], result)


def _forbid_spark() -> None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    def refuse(*args, **kwargs):
        raise SparkStarted("a SparkSession or SparkContext was created at import")

    SparkSession.Builder.getOrCreate = refuse  # type: ignore[method-assign]
    SparkSession.Builder.create = refuse  # type: ignore[method-assign]
    SparkContext.__init__ = refuse  # type: ignore[method-assign]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
