"""The reference worker: `python -m aether_mcp.reference.reference_worker`, one warm SparkSession for the original.

It only ever evaluates the original UDF, compiled from the source bytes each request carries
(the server read them and checked their hash against the signed manifest), and caches outputs per
row by content hash. It never loads candidate code and reads no workspace.
"""

from __future__ import annotations

import hashlib
import traceback
from typing import Any

from aether_mcp.evaluation.worker_server import Context, SparkWorker, refused, run
from aether_mcp.wire import value_codec

MAX_CACHED_ROWS = 500_000
REFERENCE_DAEMON = "aether_mcp.reference.reference_daemon"


class ReferenceWorker(SparkWorker):
    role = "reference"
    operations = ("evaluate", "capture", "timing")

    def __init__(self, master: str, conf: dict[str, str]) -> None:
        super().__init__(master, conf)
        self.cache: dict[str, Any] = {}
        self.loaded: dict[str, Any] = {}

    def session_conf(self) -> dict[str, str]:
        """PySpark's daemon with each worker's start done once (reference_daemon), where the job would use PySpark's own
        daemon in this process's Python: a local master, and no daemon setting of the job's."""
        from aether_mcp.evaluation.daemon_start import local_master

        conf = dict(self.conf)
        if local_master(self.master) and "spark.python.daemon.module" not in conf and conf.get("spark.python.use.daemon", "true").lower() == "true":
            conf["spark.python.daemon.module"] = REFERENCE_DAEMON
        return conf

    def own_daemon(self) -> bool:
        return self.session_conf().get("spark.python.daemon.module") == REFERENCE_DAEMON

    def warm_up(self) -> None:
        """The request path once on a built-in UDF (see warm_up), so the first real call finds it compiled."""
        from aether_mcp.evaluation import warm_up

        try:
            warm_up.reference(self.spark)
        except Exception:  # left to the first request to meet
            traceback.print_exc()

    def evaluate(self, message: dict[str, Any]) -> dict[str, Any]:
        from aether_mcp.evaluation.target_evaluation import DEFAULT_MAX_ISOLATED, BadRows, Shape, TargetError, evaluate_rows

        context = self.context(message)
        if isinstance(context, dict):
            return context
        if context.target != "original":
            return refused("the reference worker evaluates only the original UDF")
        rows = self.request_rows(message)
        if isinstance(rows, dict):
            return rows
        with self.session_lock:
            try:
                loaded = self._loaded(context)
                keys = self._cache_keys(context, rows)
                missing = [i for i, key in enumerate(keys) if key not in self.cache]
                outputs: list[Any] = [None] * len(rows)
                output_type, nullable = context.config.udf.return_type, True
                if missing:
                    computed, output_type, nullable = evaluate_rows(
                        self.spark,
                        context.config,
                        loaded,
                        [rows[i] for i in missing],
                        shape=Shape.from_request(message.get("shape")),
                        max_isolated=int(message.get("max_isolated") or DEFAULT_MAX_ISOLATED),
                        typed=bool(message.get("typed")),
                    )
                    for index, value in zip(missing, computed):
                        outputs[index] = value
                for index in missing:
                    if len(self.cache) < MAX_CACHED_ROWS:
                        self.cache[keys[index]] = outputs[index]
                for index, key in enumerate(keys):
                    outputs[index] = self.cache.get(key, outputs[index])
            except BadRows as exc:
                return {"ok": False, "error_kind": "rows", "message": str(exc)}
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc)}
        return {"ok": True, "outputs": value_codec.encode(outputs), "output_type": output_type, "output_nullable": nullable, "evaluated": len(missing)}

    def timing(self, message: dict[str, Any]) -> dict[str, Any]:
        """The original, wired as the job wires it, timed over cached Parquet rows (see cached_timing)."""
        from aether_mcp.evaluation.cached_timing import time_cached
        from aether_mcp.evaluation.target_evaluation import TargetError

        context = self.context(message)
        if isinstance(context, dict):
            return context
        if context.target != "original":
            return refused("the reference worker evaluates only the original UDF")
        problem = self.ready()
        if problem:
            return problem
        with self.session_lock:
            try:
                timed = time_cached(self.spark, context.config, self._loaded(context), str(message.get("data", "")), int(message.get("repeats", 5)), floor=True)
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc)}
            except Exception as exc:  # the original raised on these rows: its job would fail too
                text = str(exc).strip()
                return {"ok": False, "error_kind": "target", "message": f"{exc.__class__.__name__}: {text.splitlines()[0] if text else ''}"}
        return {"ok": True, "timed": timed}

    def capture(self, message: dict[str, Any]) -> dict[str, Any]:
        """The original's arguments as Spark delivers them, for plain-Python coverage and mutation runs."""
        from aether_mcp.evaluation.target_evaluation import BadRows
        from aether_mcp.reference.input_capture import capture_inputs

        context = self.context(message)
        if isinstance(context, dict):
            return context
        rows = self.request_rows(message)
        if isinstance(rows, dict):
            return rows
        with self.session_lock:
            try:
                captured = capture_inputs(self.spark, context.config, rows)
            except BadRows as exc:
                return {"ok": False, "error_kind": "rows", "message": str(exc)}
            except Exception as exc:  # Spark could not deliver these rows to a Python UDF at all
                text = str(exc).strip()
                return {"ok": False, "error_kind": "target", "message": f"{exc.__class__.__name__}: {text.splitlines()[0] if text else ''}"}
        return {"ok": True, "captured": captured}

    def _loaded(self, context: Context):
        from aether_mcp.reference.original import load_original

        key = hashlib.sha256(b"\0".join([context.source.encode(), context.filename.encode(), context.config.model_dump_json().encode()])).hexdigest()
        if key not in self.loaded:
            if len(self.loaded) > 64:
                self.loaded.clear()
            self.loaded[key] = load_original(context.config, context.source, context.filename)
        return self.loaded[key]

    @staticmethod
    def _cache_keys(context: Context, rows: list[Any]) -> list[str]:
        prefix = hashlib.sha256(context.source.encode()).hexdigest() + context.config.model_dump_json()
        return [hashlib.sha256((prefix + value_codec.dumps(row)).encode()).hexdigest() for row in rows]


if __name__ == "__main__":
    run(ReferenceWorker)
