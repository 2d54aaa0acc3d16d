"""The benchmark's own Spark application: `python -m aether_mcp.confined.bench_runner REQUEST.json`.

Separate from the correctness workers, so their warm sessions never share a JVM, cache or
Python worker pool with a timed run. It runs confined, from a request holding the config and
the sources (it reads no workspace), with the watch installed before the candidate loads. Each
timed run reads the Parquet data, applies one mode and writes every column (the inputs and the
result) to Spark's `noop` sink, so the UDF column can never be pruned. Warm-up rounds run every
mode once and are not recorded; recorded rounds run the modes in a fresh shuffled order each
round. After the rounds, the same application checks that the candidate's output over the
whole data equals the reference mode's (the original, or the best version): an order-independent
multiset of per-row hashes over the inputs and the output, compared inside Spark, so a candidate
that is fast and wrong only at benchmark scale is caught with its mismatch count. Progress goes to
a JSON-lines file the server polls; the result (raw seconds per mode, failures, the output check,
environment) to a JSON file.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aether_mcp.confined import result_file

OUT = "__aether_output"  # the same name arrow_batches gives the output column
# Confs recorded with every result: what can change a timing, without paths and JVM flags.
CONF_PREFIXES = ("spark.sql.", "spark.master", "spark.executor.memory", "spark.executor.cores", "spark.driver.memory", "spark.python", "spark.default.parallelism")
CONF_NOISE = ("spark.sql.warehouse.dir", "spark.sql.artifact")


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    report = result_file.progress_writer(request["progress"])

    from pyspark.sql import functions as F

    from aether_mcp.confined import watch
    from aether_mcp.evaluation.spark_session import create_session
    from aether_mcp.evaluation.target_evaluation import ROW_ID
    from aether_mcp.workspace import WorkspaceConfig

    config = WorkspaceConfig.model_validate(request["config"])
    watch.install([os.path.dirname(request["candidate"]["filename"])])
    report(0, 0, f"starting Spark ({request['master']})")
    local = Path(request["scratch"]) / "spark-local"
    local.mkdir(parents=True, exist_ok=True)
    confined = {"spark.python.use.daemon": "true", "spark.python.daemon.module": "aether_mcp.confined.python_daemon", "spark.local.dir": str(local)}
    spark = create_session(request["master"], {**config.spark.conf, **request.get("conf", {}), **confined}, "aether-mcp-benchmark", quick_jit=bool(request.get("quick_jit")))
    data = spark.read.parquet(request["data"])
    columns = list(data.columns)
    floor = lambda: data  # noqa: E731
    if config.udf.pandas_form == "aggregate":
        # each row is a group: numbered, one row per value, and every mode aggregates by that number
        data, columns = _values_by_group(config, data), [ROW_ID]
        floor = lambda: data.groupBy(ROW_ID).agg(F.count(F.lit(1)).alias(OUT))  # noqa: E731
    builders: dict[str, Callable[[], Any]] = {
        "floor": floor,
        "original": lambda: _original(config, request["original"], data, columns, force_arrow=False),
        "original_arrow": lambda: _original(config, request["original"], data, columns, force_arrow=True),
        "candidate": lambda: _candidate(config, request["target"], request["candidate"], data, columns),
        # try_optimization: the best version so far, from its own copy of the candidate folder
        "best": lambda: _candidate(config, request["target"], request.get("best") or {}, data, columns),
    }
    # A variant is a mode run under extra runtime confs (run_benchmark: one per mode, no confs;
    # tune_arrow_batch: one per batch size).
    variants = request.get("variants") or [{"label": mode, "mode": mode, "conf": {}} for mode in request["modes"]]
    frames: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for mode in dict.fromkeys(v["mode"] for v in variants):
        try:
            frames[mode] = builders[mode]()
        except Exception as exc:  # a mode that cannot even be built is reported, the others still run
            failed.update({v["label"]: _summary(exc) for v in variants if v["mode"] == mode})
    runs: dict[str, list[float]] = {v["label"]: [] for v in variants}
    peak_rss: dict[str, int] = {v["label"]: 0 for v in variants}
    python_time: dict[str, list[dict[str, float]]] = {v["label"]: [] for v in variants}
    # More rounds while the paired speedup's interval is wider than asked and time is left (see `precision`)
    precision = request.get("precision") or {}
    most = max(request["repeats"], int(precision.get("max_repeats", request["repeats"])))
    total = (request["warmup"] + most) * len(variants)
    done = 0
    order: list[list[str]] = []
    shuffle = random.Random(request.get("seed", 0))
    memory = _WorkerMemory()

    def one_round(round_index: int) -> None:
        nonlocal done
        active = [v for v in variants if v["label"] not in failed]
        shuffle.shuffle(active)
        warm = round_index < request["warmup"]
        order.append([v["label"] for v in active])
        for variant in active:
            label = variant["label"]
            report(done, total, f"{'warm-up' if warm else 'round ' + str(round_index - request['warmup'] + 1)}: {label}")
            before = {key: spark.conf.get(key, None) for key in variant["conf"]}
            for key, value in variant["conf"].items():
                spark.conf.set(key, str(value))
            memory.start()
            started = time.perf_counter()
            try:
                frames[variant["mode"]].write.format("noop").mode("overwrite").save()
            except Exception as exc:
                failed[label] = _summary(exc)
                continue
            finally:
                elapsed = time.perf_counter() - started
                peak = memory.stop()
                done += 1
                for key, value in before.items():
                    spark.conf.set(key, value) if value is not None else spark.conf.unset(key)
            if not warm:
                runs[label].append(elapsed)
                peak_rss[label] = max(peak_rss[label], peak)
                python_time[label].append(_python_metrics(spark))

    for round_index in range(request["warmup"] + request["repeats"]):
        one_round(round_index)
    ended = _more_rounds(precision, runs, failed, request, one_round) if precision else {"by": "repeats", "detail": f"the {request['repeats']} rounds asked for"}
    check = _output_check(frames, failed, columns)
    report(total, total, "done")
    result = {
        "runs": {label: seconds for label, seconds in runs.items() if label not in failed},
        "peak_worker_rss": {label: rss for label, rss in peak_rss.items() if label not in failed},
        "python_metrics": {label: found for label, found in python_time.items() if label not in failed},
        "failed": failed,
        "output_check": check,
        "order": order,
        "rounds_ended_by": ended,
        "environment": _environment(spark, request),
    }
    spark.stop()
    result_file.finish(request["result"], result, indent=2)


MIN_PRECISION_ROUNDS = 3  # fewer rounds give an interval that says nothing about the spread


def _more_rounds(precision: dict[str, Any], runs: dict[str, list[float]], failed: dict[str, str], request: dict[str, Any], one_round: Callable[[int], None]) -> dict[str, Any]:
    """Rounds after the asked-for ones until the speedup's 95% interval is narrow enough (or, given a decision's threshold, lies
    wholly on one side of it), the time budget is spent, or the round limit is hit."""
    from aether_mcp.bench_stats import bootstrap_paired_ci, paired_speedup

    slow, fast = precision["pair"]
    wanted = float(precision["half_width"])
    if precision.get("budget_s") is None:  # as long again as the asked-for rounds took
        budget = min(float(precision["auto_cap_s"]), sum(sum(seconds) for label, seconds in runs.items() if label not in failed))
    else:
        budget = float(precision["budget_s"])
    started = time.monotonic()
    round_index = request["warmup"] + request["repeats"]
    while True:
        if slow in failed or fast in failed or not runs.get(slow) or not runs.get(fast):
            return {"by": "failure", "detail": "a timed mode failed, so no interval is computed"}
        rounds = min(len(runs[slow]), len(runs[fast]))
        speedup = paired_speedup(runs[slow][:rounds], runs[fast][:rounds])
        low, high = bootstrap_paired_ci(runs[slow][:rounds], runs[fast][:rounds])
        half = (high - low) / 2 / speedup if speedup > 0 else float("inf")
        line = precision.get("threshold")  # a decision's line (try_optimization's 1 + min_gain): rounds go on while the interval straddles it
        if line is not None and rounds >= MIN_PRECISION_ROUNDS and not low <= float(line) <= high:
            where = "above" if low > float(line) else "below"
            return {"by": "decided", "detail": f"the 95% interval ({low:.3f}-{high:.3f}) lies wholly {where} {float(line):.3f} after {rounds} rounds", "half_width": round(half, 4)}
        if line is None and rounds >= MIN_PRECISION_ROUNDS and half <= wanted:
            return {"by": "precision", "detail": f"the 95% interval's half-width is {half:.1%} of the speedup after {rounds} rounds (asked: at most {wanted:.0%})", "half_width": round(half, 4)}
        per_round = sum(runs[label][-1] for label in runs if runs[label] and label not in failed)
        if time.monotonic() - started + per_round > budget:
            return {"by": "budget", "detail": f"the time budget for more rounds ({budget:.0f} s) ran out after {rounds} rounds; the interval's half-width is {half:.1%} of the speedup (asked: {wanted:.0%})", "half_width": round(half, 4)}
        if rounds >= int(precision["max_repeats"]):
            return {"by": "max_repeats", "detail": f"the round limit ({rounds}) was reached; the interval's half-width is {half:.1%} of the speedup (asked: {wanted:.0%})", "half_width": round(half, 4)}
        one_round(round_index)
        round_index += 1


def _values_by_group(config, data):
    """An aggregation's benchmark data: each row a group, numbered, its arrays zipped into one row per value."""
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.target_evaluation import ROW_ID, group_rows

    return group_rows(data.withColumn(ROW_ID, F.monotonically_increasing_id()), config, ordered=False)


def _grouped(config, data, aggregate):
    """`aggregate` (a Column over the argument columns) per group, with the group's number as the input column."""
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.target_evaluation import ROW_ID

    return data.groupBy(ROW_ID).agg(aggregate([F.col(f"`{arg.name}`") for arg in config.udf.args]).alias(OUT))


def _original(config, original: dict[str, str], data, columns: list[str], force_arrow: bool):
    """The UDF as the job runs it (its own transport), or as a row UDF forced onto Arrow transport."""
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.pandas_forms import for_spark
    from aether_mcp.reference.original import original_function
    from aether_mcp.spark_types import parse_type

    function = original_function(config, original["source"], original["filename"])
    return_type = parse_type(config.udf.return_type)
    if config.udf.kind == "pandas":
        if force_arrow:
            raise ValueError("the original is a pandas UDF, which already uses Arrow; original_arrow applies to row UDFs only")
        wrapped = F.pandas_udf(for_spark(function, config.udf.pandas_form, len(config.udf.args)), return_type)
        if config.udf.pandas_form == "aggregate":
            return _grouped(config, data, lambda inputs: wrapped(*inputs))
    else:
        wrapped = F.udf(function, return_type, useArrow=True if force_arrow else config.udf.use_arrow)
    return data.select(*[F.col(f"`{c}`") for c in columns], wrapped(*[F.col(f"`{c}`") for c in columns]).alias(OUT))


def _candidate(config, target: str, candidate: dict[str, str], data, columns: list[str]):
    """The candidate as a job wires it, from the source the server read (the current one, or the best version)."""
    import hashlib

    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType
    from pyspark.sql.pandas.types import to_arrow_type

    from aether_mcp.confined import arrow_batches, job_environment
    from aether_mcp.evaluation.source_modules import module_from_source
    from aether_mcp.evaluation.target_evaluation import apply_build
    from aether_mcp.spark_types import parse_type
    from aether_mcp.workspace.candidates import declared_target

    name = target.removeprefix("candidate:")
    source, filename = candidate["source"], candidate["filename"]
    kind = declared_target(source, name)
    inputs = [F.col(f"`{c}`") for c in columns]
    return_type = parse_type(config.udf.return_type)
    grouped = config.udf.pandas_form == "aggregate"
    if kind == "sql":
        job_environment.as_in_a_job()
        if grouped:
            return _grouped(config, data, lambda arguments: module_from_source(source, filename, f"aether_candidate_{name}", f"{config.udf.name}_{name}").build(*arguments))
        return apply_build(data, module_from_source(source, filename, f"aether_candidate_{name}", f"{config.udf.name}_{name}").build(*inputs), target, keep=inputs)
    if grouped:
        aggregate = arrow_batches.make_arrow_aggregate(source, hashlib.sha256(source.encode()).hexdigest(), filename, "evaluate", to_arrow_type(return_type), f"{config.udf.name}_{name}")
        return _grouped(config, data, lambda arguments: F.arrow_udf(aggregate, return_type, ArrowUDFType.GROUPED_AGG)(*arguments))
    function = arrow_batches.make_arrow_function(source, hashlib.sha256(source.encode()).hexdigest(), filename, "evaluate", to_arrow_type(return_type), f"{config.udf.name}_{name}")
    wrapped = F.arrow_udf(function, return_type, ArrowUDFType.SCALAR)
    return data.select(*inputs, wrapped(*inputs).alias(OUT))


def _output_check(frames: dict[str, Any], failed: dict[str, str], columns: list[str]) -> dict[str, Any]:
    """The candidate's output over the whole data against the reference mode's, inside Spark.

    Each row becomes a hash of its inputs and its output (as text, which keeps -0.0, NaN and
    every float bit apart; maps with their entries sorted by key, at every depth); the two
    multisets of hashes are compared with a full outer join, so the count of rows the candidate
    got wrong comes out without collecting the data.
    """
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.cached_timing import canonical

    against = next((mode for mode in ("original", "best") if mode in frames and mode not in failed), None)
    if "candidate" not in frames or "candidate" in failed:
        return {"checked": False, "reason": "the candidate mode did not run"}
    if against is None:
        return {"checked": False, "reason": "no reference mode ran (the original failed on this data, or none was timed)"}
    reference = frames[against]
    keys = [canonical(F.col(f"`{c}`"), reference.schema[c].dataType) for c in columns]

    def hashes(frame):
        value = F.coalesce(F.concat(F.lit("v:"), canonical(F.col(OUT), frame.schema[OUT].dataType).cast("string")), F.lit("null"))
        return frame.select(F.xxhash64(*keys, value).alias("h")).groupBy("h").count()

    try:
        joined = hashes(frames[against]).withColumnRenamed("count", "a").join(hashes(frames["candidate"]).withColumnRenamed("count", "b"), "h", "full_outer")
        row = joined.select(
            F.sum(F.abs(F.coalesce(F.col("a"), F.lit(0)) - F.coalesce(F.col("b"), F.lit(0)))).alias("difference"),
            F.sum(F.coalesce(F.col("a"), F.lit(0))).alias("rows"),
        ).first()
    except Exception as exc:  # the check could not run; the timings stand and the result says so
        return {"checked": False, "reason": f"the output check failed: {_summary(exc)}"}
    difference, rows = int(row["difference"] or 0), int(row["rows"] or 0)
    return {"checked": True, "against": against, "rows": rows, "mismatched": difference // 2 + difference % 2}


def _python_metrics(spark) -> dict[str, float]:
    """Seconds Spark's SQL metrics attribute to Python in the latest query (by metric name, summed over nodes)."""
    found: dict[str, float] = {}
    try:
        store = spark._jsparkSession.sharedState().statusStore()
        executions = store.executionsList()
        latest = executions.apply(executions.size() - 1)
        values = store.executionMetrics(latest.executionId())
        metrics = latest.metrics().iterator()
        while metrics.hasNext():
            metric = metrics.next()
            if "Python" in metric.name() and metric.metricType() == "timing":
                value = values.get(metric.accumulatorId())
                if value.isDefined():
                    found[metric.name()] = round(found.get(metric.name(), 0.0) + _seconds(value.get()), 4)
    except Exception:  # metrics are a bonus: a Spark without them still gives timings
        return {}
    return found


def _seconds(text: str) -> float:
    """'614 ms (282 ms, ...)' or '3.6 s (...)' -> seconds of the total."""
    number, unit = text.split()[:2]
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}.get(unit, 0.0)
    return float(number.replace(",", "")) * scale


class _WorkerMemory:
    """Samples the summed resident memory of this application's Python workers while a run lasts."""

    def __init__(self) -> None:
        self.peak = 0
        self.running = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.peak = 0
        self.running.set()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def stop(self) -> int:
        self.running.clear()
        if self.thread is not None:
            self.thread.join(2)
        return self.peak

    def _sample(self) -> None:
        while self.running.is_set():
            self.peak = max(self.peak, _python_worker_rss(os.getpid()))
            time.sleep(0.05)


def _python_worker_rss(root_pid: int) -> int:
    """Bytes resident in the pyspark daemon and worker processes below `root_pid`."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            parents[int(entry)] = int(stat.rsplit(b")", 1)[1].split()[1])
            commands[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
    total = 0
    for pid, command in commands.items():
        if b"pyspark.daemon" not in command and b"pyspark.worker" not in command:
            continue
        ancestor = parents.get(pid)
        while ancestor and ancestor != root_pid:
            ancestor = parents.get(ancestor)
        if ancestor != root_pid:
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            total += next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:"))
        except (OSError, StopIteration, ValueError):
            continue
    return total


def _summary(exc: BaseException) -> str:
    """The line of a (often very long) Spark error that says what went wrong."""
    text = str(exc) or exc.__class__.__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for marker in ("PythonException", "Error:", "Exception:"):
        for line in lines:
            if marker in line and not line.startswith("at "):
                return line[:500]
    return (lines[0] if lines else "".join(traceback.format_exception_only(type(exc), exc)).strip())[:500]


def _environment(spark, request: dict[str, Any]) -> dict[str, Any]:
    from aether_mcp.evaluation.spark_session import jvm_compiler

    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), "")
        memory_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), 0)
    except OSError:
        memory_kb = 0
    confs = dict(spark.conf.getAll)
    return {
        "spark_version": spark.version,
        "master": request["master"],
        "default_parallelism": _driver_fact(lambda: spark.sparkContext.defaultParallelism),
        "java_version": _driver_fact(lambda: spark.sparkContext._jvm.System.getProperty("java.version")),
        "jvm_compiler": jvm_compiler(spark, request["master"]),
        "python_version": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "memory_gib": round(memory_kb / 1024 / 1024, 1),
        "confs": {key: value for key, value in sorted(confs.items()) if key.startswith(CONF_PREFIXES) and not key.startswith(CONF_NOISE)},
    }


def _driver_fact(read: Callable[[], Any]) -> Any:
    """A fact only a local driver JVM knows; None through Spark Connect, where the driver is the server's."""
    try:
        return read()
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
