"""validate_on_data's candidate application: `python -m aether_mcp.confined.validation_app REQUEST.json`.

Runs confined, with the watch installed before the candidate loads. It reads only the numbered
argument rows the trusted application wrote (`inputs`, never the original's outputs), runs the
candidate over them as a job wires it (a sql build's columns, or an Arrow UDF), and writes
(row id, output, error) into its scratch folder, which the server moves next to the original's.
Where the wired job fails, the rows the candidate raises on are found (the sql probe under
TryEval, or Arrow batches that isolate failing rows) and recorded with their error. Nothing this
process says is believed: the trusted application compares what it wrote.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from aether_mcp.confined import result_file

OUTPUT_FOLDER = "candidate_output"


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    report = result_file.progress_writer(request["progress"])

    from aether_mcp.confined import watch

    watch.install([os.path.dirname(request["candidate"]["filename"])])
    try:
        result = run(request, report)
    except Exception as exc:
        from aether_mcp.evaluation.data_runs import UserFacing
        from aether_mcp.evaluation.spark_errors import explain

        result = {"error": str(exc) if isinstance(exc, UserFacing) else explain(exc, named=True), "traceback": traceback.format_exc()[-3000:]}
    result_file.finish(request["result"], result, indent=2)
    return 0


def run(request: dict[str, Any], report) -> dict[str, Any]:
    import hashlib

    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType
    from pyspark.sql.pandas.types import to_arrow_type

    from aether_mcp.confined import arrow_batches
    from aether_mcp.confined.candidate_targets import in_the_job, load_candidate
    from aether_mcp.evaluation.data_runs import UserFacing, apply_and_write, session
    from aether_mcp.evaluation.target_evaluation import OUTPUT, ROW_ID, TargetError, argument_columns, is_import_failure
    from aether_mcp.spark_types import parse_type

    report(0, 3, f"starting Spark ({request['master']})")
    config, spark = session(request, "aether-mcp-validate-candidate")
    inputs = spark.read.parquet(request["inputs"])
    candidate = request["candidate"]
    try:
        loaded = load_candidate(config, request["target"], candidate["source"], candidate["filename"])
    except TargetError as exc:
        raise UserFacing(str(exc)) from None
    wired = None
    if loaded.target_kind != "sql":  # a job runs it as an Arrow UDF; the mapper that isolates rows is the fallback
        return_type = parse_type(config.udf.return_type)
        function = arrow_batches.make_arrow_function(candidate["source"], hashlib.sha256(candidate["source"].encode()).hexdigest(), candidate["filename"], "evaluate", to_arrow_type(return_type), in_the_job(config, request["target"].removeprefix("candidate:")))
        arrow_udf = F.arrow_udf(function, return_type, ArrowUDFType.SCALAR)
        wired = lambda frame, cols: frame.select(ROW_ID, arrow_udf(*cols).alias(OUTPUT))  # noqa: E731
    report(1, 3, "running the candidate")
    ran = apply_and_write(spark, loaded, inputs, argument_columns(config), str(Path(request["scratch"]) / OUTPUT_FOLDER), is_import_failure, wired=wired)
    report(3, 3, "done")
    spark.stop()
    return {"kind": loaded.target_kind, **ran}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
