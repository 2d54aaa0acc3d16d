"""Plain-Python runs of the original and its mutants, in a process of their own.

`python -I -m aether_mcp.reference.spec_runner JOB OUT`, started by the server through the one
process runner. Modes:
- `coverage`: coverage.py (branches on) over original/udf.py while the UDF runs on the inputs;
- `mutation`: each mutant on the inputs, killed when an output differs from the original's (as
  Spark would convert it) or it raises where the original did not, in parallel, each with a
  time budget;
- `distinguish`: for each given mutant, the first probe row on which it differs from the original;
- `trace`: the lines and branches each probe row executes in original/udf.py.
Inputs come as the UDF receives them (captured through Spark) or, for probes, as generated values.
"""

from __future__ import annotations

import ast
import json
import math
import multiprocessing
import os
import signal
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from aether_mcp.evaluation.pandas_forms import EMPTY_GROUP_MESSAGE, EMPTY_GROUP_TYPE, group_columns, per_batch
from aether_mcp.judge.compare import classify
from aether_mcp.nested_values import as_udf_argument, captured_column, pandas_argument, rows_of, udf_result
from aether_mcp.wire import value_codec
from aether_mcp.wire.value_codec import Raised, Struct

PANDAS_DTYPES = {
    "double": "float64",
    "float": "float64",
    "bigint": "float64",
    "int": "float64",
    "smallint": "float64",
    "tinyint": "float64",
    "string": "str",
    "boolean": "object",
}


class MutantTimeout(Exception):
    pass


class Subject:
    """The UDF function of one module source, callable on rows the way Spark calls it."""

    def __init__(self, source: str, filename: str, job: dict[str, Any]) -> None:
        name = f"aether_spec_{abs(hash((source, filename)))}"
        module = types.ModuleType(name)
        module.__file__ = filename
        sys.modules[name] = module
        exec(compile(source, filename, "exec"), module.__dict__)
        self.kind = job["kind"]
        self.function: Callable[..., Any] = getattr(module, job["function"])
        self.grouped = job.get("pandas_form") == "aggregate"
        if self.kind == "pandas":
            self.function = per_batch(self.function, job.get("pandas_form"), len(job["arg_types"]))
        self.return_type = job["return_type"]
        self.use_arrow = job.get("use_arrow")
        self.arg_types = job["arg_types"]

    def outputs(self, inputs: list[Any], captured: bool) -> list[Any]:
        """Outputs per row, normalised as Spark converts them; a Raised where the call raised."""
        if self.kind == "pandas":
            return self._pandas_outputs(inputs, captured)
        results = []
        for args in inputs:
            try:
                results.append(self._normalise(self.function(*[as_udf_argument(value) for value in args])))
            except MutantTimeout:
                raise
            except Exception as exc:
                results.append(Raised(type(exc).__name__, str(exc)))
        return results

    def _pandas_outputs(self, inputs: list[Any], captured: bool) -> list[Any]:
        import pandas as pd

        if not inputs:
            return []
        if self.grouped:
            return [self._group_output(row, captured) for row in inputs]
        if captured:
            dtypes = inputs[0]["dtypes"]
            columns = [captured_column([row["values"][i] for row in inputs], dtypes[i]) for i in range(len(dtypes))]
            try:
                result = rows_of(self.function(*columns))
            except MutantTimeout:
                raise
            except Exception as exc:
                return [Raised(type(exc).__name__, str(exc))] * len(inputs)
            if len(result) != len(inputs):
                return [Raised("ValueError", "result length differs from the batch")] * len(inputs)
            return [self._normalise(value) for value in result]
        results = []
        for row in inputs:  # generated probes: one row per batch
            columns = [pandas_argument([value]) if isinstance(value, Struct) else pd.Series([_probe_value(value)], dtype=PANDAS_DTYPES.get(ddl, "object")) for value, ddl in zip(row, self.arg_types)]
            try:
                results.append(self._normalise(rows_of(self.function(*columns))[0]))
            except MutantTimeout:
                raise
            except Exception as exc:
                results.append(Raised(type(exc).__name__, str(exc)))
        return results

    def _group_output(self, row: Any, captured: bool) -> Any:
        """An aggregation's value for one group: its columns as captured through Spark, or a generated row's arrays zipped."""
        import pandas as pd

        if captured:
            if row is None:
                return Raised(EMPTY_GROUP_TYPE, EMPTY_GROUP_MESSAGE)
            columns = [captured_column(values, dtype) for values, dtype in zip(row["columns"], row["dtypes"])]
        else:
            group = group_columns(row)
            if group is None:
                return Raised(EMPTY_GROUP_TYPE, EMPTY_GROUP_MESSAGE)
            element_types = [ddl.removeprefix("array<").removesuffix(">") for ddl in self.arg_types]
            columns = [pd.Series([_probe_value(value) for value in values], dtype=PANDAS_DTYPES.get(ddl, "object")) for values, ddl in zip(group, element_types)]
        try:
            return self._normalise(self.function(*columns))
        except MutantTimeout:
            raise
        except Exception as exc:
            return Raised(type(exc).__name__, str(exc))

    def _normalise(self, value: Any) -> Any:
        if hasattr(value, "tolist") and not isinstance(value, (list, str, bytes)):
            value = value.tolist()
        if self.kind == "pandas":
            if isinstance(value, float) and math.isnan(value):
                return None  # Spark turns NaN in a pandas UDF's float result into null
            if value is not None and type(value).__name__ in ("NAType", "NaTType"):
                return None
        if self.return_type in ("double", "float") and isinstance(value, int) and not isinstance(value, bool):
            return float(value) if self.use_arrow else None  # pickled rows: an int for a double is null
        if self.return_type.startswith(("struct<", "map<", "array<")):
            return udf_result(value, self.return_type, nan_is_null=self.kind == "pandas")
        return value


def run_coverage(job: dict[str, Any]) -> dict[str, Any]:
    import coverage

    path = job["module_path"]
    cov = coverage.Coverage(branch=True, data_file=None, include=[path])
    cov.start()
    try:
        subject = Subject(job["source"], path, job)
        subject.outputs(job["inputs"], captured=True)
    finally:
        cov.stop()
    report_path = job["work_dir"] + "/coverage.json"
    cov.json_report(outfile=report_path, morfs=[path])
    with open(report_path, encoding="utf-8") as handle:
        files = json.load(handle)["files"]
    entry = next(iter(files.values()))
    return measured_part(entry, import_time_lines(job["source"]))


# Module-level statements whose lines run when the module is imported, once, whatever the rows:
# import guards (`try: import h3 / except ImportError: ...`), version switches. No case can reach
# their other branch, so coverage measures the UDF, its helpers and what they read, not them.
IMPORT_TIME_STATEMENTS = (ast.Try, ast.If, ast.For, ast.While, ast.With, ast.Match, getattr(ast, "TryStar", ast.Try))


def import_time_lines(source: str) -> set[int]:
    """Lines of module-level control flow (outside any def or class body they hold)."""
    lines: set[int] = set()
    for statement in ast.parse(source).body:
        if not isinstance(statement, IMPORT_TIME_STATEMENTS):
            continue
        stack: list[ast.AST] = [statement]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.stmt, ast.excepthandler)):
                lines.add(node.lineno)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                lines.update(d.lineno for d in node.decorator_list)
                continue  # its body runs per call: measured
            stack.extend(ast.iter_child_nodes(node))
    return lines


def measured_part(entry: dict[str, Any], left_out: set[int]) -> dict[str, Any]:
    """coverage.py's report for one file without the lines in `left_out` and the branches leaving them."""
    executed = [n for n in entry["executed_lines"] if n not in left_out]
    missing = [n for n in entry["missing_lines"] if n not in left_out]
    executed_branches = [b for b in entry.get("executed_branches", []) if b[0] not in left_out]
    missing_branches = [b for b in entry["missing_branches"] if b[0] not in left_out]
    summary = {
        "num_statements": len(executed) + len(missing),
        "covered_lines": len(executed),
        "num_branches": len(executed_branches) + len(missing_branches),
        "covered_branches": len(executed_branches),
    }
    left_out_measured = sorted(n for n in left_out if n in set(entry["executed_lines"]) | set(entry["missing_lines"]))
    return {"summary": summary, "missing_lines": missing, "missing_branches": missing_branches, "executed_lines": executed, "import_time_lines": left_out_measured}


def run_mutation(job: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    original = Subject(job["source"], job["module_path"], job)
    reference = original.outputs(job["inputs"], captured=True)
    original_seconds = time.monotonic() - started
    budget = max(2.0, 50 * original_seconds)
    tasks = [(mutant, job, reference, budget) for mutant in job["mutants"]]
    workers = max(1, min(int(job.get("workers") or os.cpu_count() or 1), len(tasks) or 1))
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            verdicts = pool.map(_judge_mutant, tasks, chunksize=max(1, len(tasks) // (workers * 4)))
    else:
        verdicts = [_judge_mutant(task) for task in tasks]
    return {"verdicts": verdicts, "original_seconds": original_seconds, "budget_s": budget}


def run_distinguish(job: dict[str, Any]) -> dict[str, Any]:
    original = Subject(job["source"], job["module_path"], job)
    probes = job["probes"]
    reference = original.outputs(probes, captured=False)
    found = {}
    for mutant in job["mutants"]:
        found[mutant["id"]] = None
        try:
            subject = Subject(mutant["source"], f"<mutant {mutant['id']}>", job)
            with _time_budget(max(5.0, len(probes) * 0.01)):
                outputs = subject.outputs(probes, captured=False)
        except Exception:
            continue
        for index, (expected, actual) in enumerate(zip(reference, outputs)):
            if classify(expected, actual) is not None:
                found[mutant["id"]] = index
                break
    return {"first_difference": found}


def run_trace(job: dict[str, Any]) -> dict[str, Any]:
    path = job["module_path"]
    subject = Subject(job["source"], path, job)
    traces = []
    for row in job["probes"]:
        arcs: set[tuple[int, int]] = set()
        last: dict[int, int] = {}

        def tracer(frame, event, arg, arcs=arcs, last=last):
            if frame.f_code.co_filename != path:
                return None
            key = id(frame)
            if event == "call":
                last[key] = -frame.f_code.co_firstlineno
            elif event == "line":
                arcs.add((last.get(key, -frame.f_code.co_firstlineno), frame.f_lineno))
                last[key] = frame.f_lineno
            elif event == "return":
                arcs.add((last.get(key, frame.f_lineno), -frame.f_code.co_firstlineno))
            return tracer

        sys.settrace(tracer)
        try:
            subject.outputs([row], captured=False)
        finally:
            sys.settrace(None)
        traces.append(sorted(arcs))
    return {"arcs": traces}


def _judge_mutant(task: tuple[dict[str, Any], dict[str, Any], list[Any], float]) -> dict[str, Any]:
    mutant, job, reference, budget = task
    try:
        with _time_budget(budget):
            subject = Subject(mutant["source"], f"<mutant {mutant['id']}>", job)
            outputs = subject.outputs(job["inputs"], captured=True)
    except MutantTimeout:
        return {"id": mutant["id"], "killed": True, "by": "timeout"}
    except Exception as exc:  # the mutant does not even load: the tests need not kill it
        return {"id": mutant["id"], "killed": None, "by": f"invalid: {type(exc).__name__}"}
    for index, (expected, actual) in enumerate(zip(reference, outputs)):
        if classify(expected, actual) is not None:
            return {"id": mutant["id"], "killed": True, "by": f"case {index}"}
    return {"id": mutant["id"], "killed": False, "by": None}


class _time_budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        signal.signal(signal.SIGALRM, _raise_timeout)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _raise_timeout(signum: int, frame: Any) -> None:
    raise MutantTimeout()


def _probe_value(value: Any) -> Any:
    return float("nan") if value is None else value


def run_cost(job: dict[str, Any]) -> dict[str, Any]:
    """Seconds per row of each subject's Python function on its rows, called as Spark calls it (no Spark).

    Each subject runs for about `budget_s` (whole passes over its rows, at least one), under a hard limit of
    four times that; a subject that cannot load, or whose every row raises, says so instead of a cost.
    """
    budget = float(job.get("budget_s", 0.3))
    measured = []
    for subject_job in job["subjects"]:
        rows = subject_job["inputs"]
        entry: dict[str, Any] = {"id": subject_job["id"], "seconds_per_row": None, "rows_timed": 0, "raised": 0, "problem": None}
        try:
            with _time_budget(budget * 4 + 1):
                subject = Subject(subject_job["source"], subject_job["module_path"], subject_job)
                if subject.kind == "pandas":
                    entry["problem"] = "a pandas UDF: its cost per row is its batch cost, not measured here"
                else:
                    started, timed, raised = time.perf_counter(), 0, 0
                    while timed == 0 or time.perf_counter() - started < budget:
                        outputs = subject.outputs(rows, captured=False)
                        timed += len(rows)
                        raised += sum(isinstance(o, Raised) for o in outputs)
                    seconds = time.perf_counter() - started
                    entry.update(seconds_per_row=seconds / timed, rows_timed=timed, raised=raised)
                    if raised == timed:
                        entry["problem"] = "the function raised on every generated row"
        except MutantTimeout:
            entry["problem"] = f"still running after {budget * 4 + 1:.1f}s (loading the module or calling it); its cost per row is at least that over {len(rows)} rows"
        except BaseException as exc:  # noqa: BLE001  (one subject's failure must not hide the others)
            entry["problem"] = f"could not be loaded or called: {type(exc).__name__}: {str(exc)[:200]}"
        measured.append(entry)
    return {"measured": measured}


MODES = {"coverage": run_coverage, "mutation": run_mutation, "distinguish": run_distinguish, "trace": run_trace, "cost": run_cost}


def main() -> None:
    job_path, out_path = sys.argv[1], sys.argv[2]
    with open(job_path, encoding="utf-8") as handle:
        job = value_codec.decode(json.load(handle))
    result = MODES[job["mode"]](job)
    with open(out_path + ".partial", "w", encoding="utf-8") as handle:
        json.dump(value_codec.encode(result), handle)
    os.replace(out_path + ".partial", out_path)


if __name__ == "__main__":
    main()
