"""A sql candidate's `build(*cols)` in a throwaway process: `python -m aether_mcp.confined.sql_build FD`.

The candidate worker is long-lived and judges one candidate after another, so a `build()` that
ran in it could rewrite the harness for the next candidate. It runs here instead: a fresh
interpreter started by the worker (see `build_in_child`), in a network namespace of its own with
its loopback down where the machine allows it, under a Landlock domain that lets it write
nothing, with the watch installed before the candidate loads. No JVM runs here: the columns are
Spark Connect's client-side Columns, which are plain data (protobuf expressions), so nothing the
build does reaches a Spark session, the worker's JVM gateway or its harness. Only the expression
travels back, as protobuf bytes the worker turns into Catalyst expressions in its own session
(see `to_columns`), where the plan checks and the comparison then judge it.

The request comes on stdin as JSON (source, filename, name, argument names); the result goes to
the file descriptor FD, so that nothing the candidate prints can be taken for it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from typing import Any

from aether_mcp.evaluation.spark_errors import explain

BUILD_TIMEOUT_S = 60
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"


class BuildFailed(Exception):
    """The build did not produce an expression; `stage` is where it failed (import, build, result, process)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def main(argv: list[str]) -> int:
    out = int(argv[1])
    request = json.loads(sys.stdin.read())
    os.environ[CONNECT_MODE_ENV] = "1"  # pyspark.sql.functions then builds Spark Connect Columns
    result: dict[str, Any]
    try:
        sealed = _seal()
        result = _build(request)
        result["sealed"] = sealed
    except BaseException as exc:  # the harness's own failure, reported rather than lost
        result = {"ok": False, "stage": "process", "message": f"{exc.__class__.__name__}: {exc}", "events": []}
    with os.fdopen(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os._exit(0)  # threads the candidate started end here


def _seal() -> bool:
    """Write nothing from here on (a Landlock domain stacked on the worker's); False where the kernel has no Landlock."""
    from aether_mcp.confined import landlock

    try:
        landlock.restrict(["/"], ["/dev/null"])
    except landlock.LandlockError:
        return False
    return True


def _build(request: dict[str, Any]) -> dict[str, Any]:
    import pyspark.sql.connect.udf as connect_udf
    import pyspark.sql.types as spark_types

    from aether_mcp.confined import job_environment, watch
    from aether_mcp.spark_types import parse_type

    # Type names a build passes as text (F.udf(f, "double"), say) parse here; Connect's client
    # would ask a server, and there is none.
    connect_udf._parse_datatype_string = parse_type
    spark_types._parse_datatype_string = parse_type
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.source_modules import module_from_source

    job_environment.as_in_a_job()
    filename, name = request["filename"], request["name"]
    watch.install([os.path.dirname(filename)])
    watch.drain()
    columns = [F.col(f"`{arg}`") for arg in request["args"]]
    with watch.Watch():
        try:
            module = module_from_source(request["source"], filename, f"aether_candidate_{name}", request.get("named"))
        except BaseException as exc:  # the candidate is untrusted code: any failure is its own
            return {"ok": False, "stage": "import", "message": f"{exc.__class__.__name__}: {exc}", "events": watch.drain()}
        build = getattr(module, "build", None)
        if not callable(build):
            return {"ok": False, "stage": "import", "message": f"candidate/{name}.py has TARGET = 'sql' but no build(*cols) function", "events": watch.drain()}
        try:
            built = build(*columns)
        except BaseException as exc:
            return {"ok": False, "stage": "build", "message": f"{explain(exc, named=True)}", "events": watch.drain()}
    events = watch.drain()
    try:
        if isinstance(built, Column):
            steps = [[None, _encoded(built)]]
        elif isinstance(built, (list, tuple)) and built and all(_is_step(step, Column) for step in built):
            steps = [[str(step_name), _encoded(column)] for step_name, column in built]
        else:
            return {"ok": False, "stage": "result", "message": f"build(*cols) must return a Column or a non-empty list of (name, Column) steps, not {type(built).__name__}", "events": events}
    except Exception as exc:  # a Column whose expression cannot be written out
        return {"ok": False, "stage": "result", "message": f"its expression could not be serialized: {explain(exc, named=True)}", "events": events}
    return {"ok": True, "steps": steps, "events": events}


def _is_step(step: Any, column_type: type) -> bool:
    return isinstance(step, (list, tuple)) and len(step) == 2 and isinstance(step[0], str) and isinstance(step[1], column_type)


def _encoded(column: Any) -> str:
    return base64.b64encode(column._expr.to_plan(None).SerializeToString()).decode("ascii")


# ---- the worker's side ----

_network_prefix: list[list[str] | None] = []
_prefix_lock = threading.Lock()
# read when the worker imports this module, before its environment loses the harness's variables (job_environment)
_CONFINED = os.environ.get("AETHER_CONFINED") == "1"


def network_prefix() -> list[str] | None:
    """`unshare` arguments that start a process in a network namespace of its own (loopback down), or None."""
    with _prefix_lock:
        if not _network_prefix:
            unshare = shutil.which("unshare")
            found = None
            for prefix in ([unshare, "--net"], [unshare, "--user", "--map-root-user", "--net"]) if unshare else ():
                try:
                    if subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30).returncode == 0:
                        found = prefix
                        break
                except (OSError, subprocess.TimeoutExpired):
                    continue
            _network_prefix.append(found)
        return _network_prefix[0]


def build_in_child(source: str, filename: str, name: str, args: list[str], timeout_s: float = BUILD_TIMEOUT_S, named: str | None = None) -> dict[str, Any]:
    """Run the candidate's build in a fresh process; its result (see `_build`), or BuildFailed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AETHER_") and key != CONNECT_MODE_ENV}
    prefix = network_prefix()
    if prefix is None and _CONFINED:
        # a confined worker's build shares nothing with it, its loopback included; without its own namespace it is not run
        raise BuildFailed("process", "the build process could not get a network namespace of its own (unshare --net failed inside the confined worker), so no build ran; run the call again, and if it fails the same way this machine limits nested namespaces (sysctl user.max_user_namespaces)")
    read, write = os.pipe()
    argv = [*(prefix or []), sys.executable, "-B", "-m", "aether_mcp.confined.sql_build", str(write)]
    try:
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, pass_fds=(write,), start_new_session=True)
    except OSError as exc:
        os.close(read)
        os.close(write)
        raise BuildFailed("process", f"the build process could not start: {exc}") from None
    os.close(write)
    request = json.dumps({"source": source, "filename": filename, "name": name, "args": args, "named": named}).encode()
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(_read_all(read)), daemon=True)
    reader.start()
    try:
        _, stderr = child.communicate(request, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(child)
        child.communicate()
        reader.join(5)
        raise BuildFailed("build", f"build(*cols) took more than {timeout_s:.0f}s") from None
    finally:
        _kill(child)
    reader.join(timeout_s)
    raw = b"".join(chunks)
    try:
        result = json.loads(raw) if raw else None
    except ValueError:
        result = None
    if not isinstance(result, dict):
        tail = stderr.decode(errors="replace").strip()[-400:]
        raise BuildFailed("process", f"the build process ended (exit {child.returncode}) without a result: {tail}")
    return result


def _read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _kill(child: subprocess.Popen) -> None:
    """End the build process and anything it started in its session."""
    try:
        os.killpg(child.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


def to_columns(spark: Any, steps: list[list[Any]]) -> Any:
    """The build's result as classic Columns of `spark`: a Column, or (name, Column) steps."""
    from pyspark.sql import Column

    jvm = spark._jvm
    planner = _planner(spark)
    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils
    columns = []
    for step_name, encoded in steps:
        proto = jvm.org.apache.spark.connect.proto.Expression.parseFrom(bytearray(base64.b64decode(encoded)))
        columns.append((step_name, Column(utils.column(planner.transformExpression(proto)))))
    if len(columns) == 1 and columns[0][0] is None:
        return columns[0][1]
    return [(str(step_name), column) for step_name, column in columns]


_planners: dict[int, Any] = {}


def _planner(spark: Any) -> Any:
    """Spark Connect's own planner over this session, which turns protobuf expressions into Catalyst ones."""
    key = id(spark._jsparkSession)
    if key not in _planners:
        jvm = spark._jvm
        holder = jvm.org.apache.spark.sql.connect.service.SessionHolder("aether", "judge", spark._jsparkSession)
        _planners.clear()
        _planners[key] = jvm.org.apache.spark.sql.connect.planner.SparkConnectPlanner(holder, jvm.scala.Option.empty())
    return _planners[key]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
