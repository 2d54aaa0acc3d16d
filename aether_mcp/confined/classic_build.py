"""A sql candidate built as its job builds it: `python -m aether_mcp.confined.classic_build REQUEST.json`, run confined.

The judge builds a sql candidate in a throwaway process on Spark Connect's client-side Columns
(see sql_build); the converted job imports the candidate's module and calls `build(*cols)` with
PySpark's classic Columns in a live session. A build can tell those apart, so the audit builds it
once more here, the job's way: a SparkSession of its own (local, one core), the candidate's module
imported from a file by its name, `build()` called with `F.col` of each argument. The analysed
plan of the judged frame (see candidate_targets.judged_plan) is the result, for the audit to
compare with the expression it judged. As in every process that loads agent code, the harness's
variables are gone from the environment before the candidate loads (job_environment).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

STARTED = "started"


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    folder = Path(request["scratch"]) / "job"
    folder.mkdir()
    module_name = request["module"]
    (folder / f"{module_name}.py").write_text(request["source"], encoding="utf-8")
    sys.path.insert(0, str(folder))
    from pyspark.sql import functions as F

    # everything the harness reads after the build is bound here, before the candidate's module
    # loads, so a module planted under a harness name cannot stand in for it
    from aether_mcp.confined import job_environment, result_file
    from aether_mcp.confined.candidate_targets import judged_plan
    from aether_mcp.evaluation.spark_session import create_session
    from aether_mcp.workspace import WorkspaceConfig

    # its scratch folder (named by the harness's variables) holds the JVM's files: made before they go
    spark = create_session("local[1]", {"spark.sql.shuffle.partitions": "1"}, "job", quick_jit=True)
    # from here on, an end without a result is the candidate's doing (its import or build), not the session's
    (Path(request["scratch"]) / STARTED).write_text("session ready\n", encoding="utf-8")
    job_environment.as_in_a_job()
    result: dict
    try:
        module = importlib.import_module(module_name)
        built = module.build(*[F.col(f"`{name}`") for name in request["args"]])
    except BaseException as exc:  # the candidate's own failure; the judged build reports its own
        result = {"built": False, "error": f"{exc.__class__.__name__}: {str(exc).strip()[:400]}"}
    else:
        try:
            result = {"built": True, "plan": judged_plan(spark, WorkspaceConfig.model_validate(request["config"]), built, "job")}
        except Exception as exc:  # a result that is no expression, or one that does not analyse
            result = {"built": False, "error": f"{exc.__class__.__name__}: {str(exc).strip()[:400]}"}
    result_file.finish(request["result"], result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
