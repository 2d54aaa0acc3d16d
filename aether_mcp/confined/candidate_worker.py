"""The candidate worker: `python -m aether_mcp.confined.candidate_worker`, one warm SparkSession for agent code.

Started confined by the server (see aether_mcp.processes.confinement): it reads the Python
environment and nothing of any workspace; every request carries the candidate's source as the
server read it. Its Spark scratch (`spark.local.dir`, the JVM's temporary files) lives in the
worker's scratch folder; Spark's Python workers, where vectorized candidates run, start from
aether_mcp.confined.python_daemon, which installs the watch and narrows their writes to the
call's scratch folder (emptied by the server after every request). Every reply carries the watch
events the request raised.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import traceback
from pathlib import Path
from typing import Any

from aether_mcp.confined import arrow_batches, leftovers, python_daemon, watch
from aether_mcp.evaluation.worker_server import Context, SparkWorker, refused, run
from aether_mcp.wire import value_codec

SCRATCH_ENV = "AETHER_SCRATCH"
CALL_SCRATCH_ENV = "AETHER_CALL_SCRATCH"


class CandidateWorker(SparkWorker):
    role = "candidate"
    operations = ("evaluate", "audit", "plan", "timing")

    def __init__(self, master: str, conf: dict[str, str]) -> None:
        watch.install()  # before any agent code can load in this process
        super().__init__(master, conf)
        self.loaded: dict[str, Any] = {}
        self.workers_ran: str | None = None  # the candidate whose code Spark's Python workers may hold

    def session_conf(self) -> dict[str, str]:
        conf = dict(self.conf)
        scratch = os.environ.get(SCRATCH_ENV)
        conf["spark.python.use.daemon"] = "true"
        conf["spark.python.daemon.module"] = "aether_mcp.confined.python_daemon"
        conf[f"spark.executorEnv.{python_daemon.GC_FREEZE_ENV}"] = "1"  # judging only: see python_daemon
        if scratch:
            local = Path(scratch) / "spark-local"
            local.mkdir(parents=True, exist_ok=True)
            conf.setdefault("spark.local.dir", str(local))
        return conf

    def own_daemon(self) -> bool:
        return True  # python_daemon, whatever the master

    def warm_up(self) -> None:
        """The request path once on built-in sql and vectorized candidates (see warm_up), loaded from a scratch path."""
        from aether_mcp.evaluation import warm_up

        try:
            warm_up.candidate(self.spark, os.path.join(os.environ.get("AETHER_CALL_SCRATCH") or tempfile.gettempdir(), "warm-up"))
        except Exception:  # left to the first request to meet
            traceback.print_exc()
        watch.drain()  # nothing the warm-up did is the agent's
        self.workers_ran = "warm-up"
        self._clean_python_workers(None)
        try:  # a fresh daemon, started on harness code only, for the first request
            self.spark.range(1).mapInArrow(arrow_batches.passthrough, "id long").collect()
        except Exception:
            traceback.print_exc()

    def _clean_python_workers(self, source: str | None) -> None:
        """Before a request for another candidate than the last, end every Python worker and their daemon.

        Within one candidate's requests Spark reuses its Python workers, as a job's executors do;
        a worker (or the daemon it forked from) never serves another candidate, so nothing one
        candidate leaves in a worker reaches another's run; nor does a process one of them started
        (see leftovers). Spark starts a fresh daemon on the next task.
        """
        key = hashlib.sha256(source.encode()).hexdigest() if source is not None else None
        if self.workers_ran in (None, key):
            self.workers_ran = key
            return
        context = self.spark.sparkContext
        jvm = context._jvm
        # SparkEnv keeps its worker factories in a private map; it stops them the same way when it stops.
        field = jvm.java.lang.Class.forName("org.apache.spark.SparkEnv").getDeclaredField("pythonWorkers")
        field.setAccessible(True)
        factories = field.get(context._jsc.sc().env())
        running = factories.valuesIterator()
        while running.hasNext():
            running.next().stop()
        factories.clear()
        # and whatever of the last candidate's outlived its daemon: every process here but this one and the JVM
        leftovers.end_all_but({self.spark.sparkContext._gateway.proc.pid})
        self.workers_ran = key

    def evaluate(self, message: dict[str, Any]) -> dict[str, Any]:
        from aether_mcp.evaluation.target_evaluation import DEFAULT_MAX_ISOLATED, BadRows, Shape, TargetError, evaluate_rows

        context = self._candidate_context(message)
        if isinstance(context, dict):
            return context
        rows = self.request_rows(message)
        if isinstance(rows, dict):
            return rows
        events: list[dict[str, Any]] = []
        with self.session_lock:
            watch.drain()
            self._clean_python_workers(context.source)
            try:
                loaded = self._loaded(context)
                events += loaded.events  # what the watch saw while its build ran, reported once
                loaded.events = []
                outputs, output_type, nullable = evaluate_rows(
                    self.spark,
                    context.config,
                    loaded,
                    rows,
                    shape=Shape.from_request(message.get("shape")),
                    max_isolated=int(message.get("max_isolated") or DEFAULT_MAX_ISOLATED),
                    typed=bool(message.get("typed")),
                    events=events,
                )
            except BadRows as exc:
                return {"ok": False, "error_kind": "rows", "message": str(exc), "events": watch.drain()}
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc), "events": watch.drain() + events + exc.events}
        return {
            "ok": True,
            "outputs": value_codec.encode(outputs),
            "output_type": output_type,
            "output_nullable": nullable,
            "evaluated": len(rows),
            "events": watch.drain() + events,
        }

    def audit(self, message: dict[str, Any]) -> dict[str, Any]:
        """The candidate run under watch (see candidate_targets.audit_target)."""
        from aether_mcp.confined.candidate_targets import audit_target
        from aether_mcp.evaluation.target_evaluation import TargetError

        context = self._candidate_context(message)
        if isinstance(context, dict):
            return context
        runs = {str(label): (value_codec.decode(run["rows"]), int(run["batch_rows"])) for label, run in dict(message.get("runs", {})).items()}
        problem = self.ready()
        if problem:
            return problem
        with self.session_lock:
            self._clean_python_workers(context.source)
            try:
                splits = {str(label): [int(n) for n in lengths] for label, lengths in dict(message.get("splits") or {}).items()}
                report = audit_target(self.spark, context.config, context.target, context.source, context.filename, runs, splits)
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc), "events": watch.drain() + exc.events}
        report["events"] = report["events"] + watch.drain()
        return {"ok": True, "report": value_codec.encode(report)}

    def plan(self, message: dict[str, Any]) -> dict[str, Any]:
        """A sql candidate's plan profile over a Parquet file (see plan_profile); the query is never run."""
        from aether_mcp.confined.candidate_targets import plan_target

        return self._on_sql(message, "profile", lambda context, loaded, data: plan_target(self.spark, context.config, loaded, data))

    def timing(self, message: dict[str, Any]) -> dict[str, Any]:
        """A sql candidate timed over cached Parquet rows (see cached_timing): micro_benchmark's inner loop."""
        from aether_mcp.evaluation.cached_timing import time_cached

        repeats, steps = int(message.get("repeats", 5)), bool(message.get("steps"))
        return self._on_sql(message, "timed", lambda context, loaded, data: time_cached(self.spark, context.config, loaded, data, repeats, steps=steps))

    def _on_sql(self, message: dict[str, Any], key: str, action: Any) -> dict[str, Any]:
        """`action(context, loaded, data)` for a sql candidate over the request's Parquet data, its answer under `key`."""
        from aether_mcp.evaluation.target_evaluation import TargetError

        context = self._candidate_context(message)
        if isinstance(context, dict):
            return context
        problem = self.ready()
        if problem:
            return problem
        with self.session_lock:
            self._clean_python_workers(context.source)
            try:
                loaded = self._loaded(context)
                if loaded.target_kind != "sql":
                    return refused(f"{context.target} is not a sql candidate")
                answer = action(context, loaded, str(message.get("data", "")))
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc)}
            except Exception as exc:  # a plan that does not analyse, or a job that fails, is the candidate's problem
                text = str(exc).strip()
                return {"ok": False, "error_kind": "target", "message": f"{exc.__class__.__name__}: {text.splitlines()[0] if text else ''}"}
        return {"ok": True, key: answer, "events": watch.drain()}

    def _candidate_context(self, message: dict[str, Any]) -> Context | dict[str, Any]:
        context = self.context(message)
        if isinstance(context, dict):
            return context
        if not context.target.startswith("candidate:"):
            return refused("the candidate worker evaluates only candidate:<name> targets")
        return context

    def _loaded(self, context: Context):
        """A target prepared once per content (the source as the server read it, with its config)."""
        from aether_mcp.confined.candidate_targets import load_candidate

        key = hashlib.sha256(b"\0".join([context.target.encode(), context.source.encode(), context.filename.encode(), context.config.model_dump_json().encode()])).hexdigest()
        if key not in self.loaded:
            if len(self.loaded) > 64:
                self.loaded.clear()
            self.loaded[key] = load_candidate(context.config, context.target, context.source, context.filename)
        return self.loaded[key]


if __name__ == "__main__":
    run(CandidateWorker)
