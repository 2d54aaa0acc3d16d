"""A Spark worker process: one warm SparkSession serving evaluation requests on a Unix socket.

Started by the server's WorkerPool as `python -m aether_mcp.evaluation.spark_worker`. The
`reference` role only ever loads a workspace's `original/udf.py` (after checking the workspace's
protected files) and caches its outputs per row by content hash; the `candidate` role loads
agent code and is never trusted. Requests are served one at a time on the session; the process
exits when its parent (the server) goes away.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import socketserver
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from aether_mcp.wire import value_codec
from aether_mcp.wire.worker_protocol import receive_message, send_message

MAX_CACHED_ROWS = 500_000


class SparkWorker:
    def __init__(self, role: str, master: str, conf: dict[str, str]) -> None:
        self.role = role
        self.master = master
        self.conf = conf
        self.session_lock = threading.Lock()
        self.spark = None
        self.spark_error: str | None = None
        self.spark_ready = threading.Event()
        self.reference_cache: dict[str, Any] = {}
        self.loaded_targets: dict[str, Any] = {}

    def start_spark(self) -> None:
        from aether_mcp.evaluation.spark_session import create_session

        try:
            self.spark = create_session(self.master, self.conf, app_name=f"aether-mcp-{self.role}")
        except Exception as exc:  # reported to every request, and the server restarts the worker
            self.spark_error = f"Spark failed to start: {exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            traceback.print_exc()
        finally:
            self.spark_ready.set()

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "role": self.role, "spark_ready": self.spark_ready.is_set() and self.spark is not None}
        if op == "evaluate":
            return self.evaluate(message)
        if op == "capture" and self.role == "reference":
            return self.capture(message)
        if op == "audit" and self.role == "candidate":
            return self.audit(message)
        if op == "plan" and self.role == "candidate":
            return self.plan(message)
        return {"ok": False, "error_kind": "refused", "message": f"unknown request {op!r}"}

    def evaluate(self, message: dict[str, Any]) -> dict[str, Any]:
        from aether_mcp.evaluation.target_evaluation import DEFAULT_MAX_ISOLATED, BadRows, Shape, TargetError, evaluate_rows, load_target

        target = str(message.get("target", ""))
        if self.role == "reference" and target != "original":
            return {"ok": False, "error_kind": "refused", "message": "the reference worker evaluates only the original UDF"}
        if self.role == "candidate" and not target.startswith("candidate:"):
            return {"ok": False, "error_kind": "refused", "message": "the candidate worker evaluates only candidate:<name> targets"}
        prepared = self._prepare(message)
        if isinstance(prepared, dict):
            return prepared
        workspace, rows = prepared
        with self.session_lock:
            try:
                loaded = self._loaded(workspace, target, load_target)
                keys = self._cache_keys(workspace, loaded.source_digest, rows) if self.role == "reference" else None
                missing = list(range(len(rows))) if keys is None else [i for i, key in enumerate(keys) if key not in self.reference_cache]
                outputs: list[Any] = [None] * len(rows)
                output_type, nullable = workspace.config.udf.return_type, True
                if missing:
                    computed, output_type, nullable = evaluate_rows(
                        self.spark,
                        workspace.config,
                        loaded,
                        [rows[i] for i in missing],
                        shape=Shape.from_request(message.get("shape")),
                        max_isolated=int(message.get("max_isolated") or DEFAULT_MAX_ISOLATED),
                        typed=bool(message.get("typed")),
                    )
                    for index, value in zip(missing, computed):
                        outputs[index] = value
                if keys is not None:
                    for index in missing:
                        if len(self.reference_cache) < MAX_CACHED_ROWS:
                            self.reference_cache[keys[index]] = outputs[index]
                    for index, key in enumerate(keys):
                        outputs[index] = self.reference_cache.get(key, outputs[index])
            except BadRows as exc:
                return {"ok": False, "error_kind": "rows", "message": str(exc)}
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc), "restart": exc.in_driver}
        return {
            "ok": True,
            "outputs": value_codec.encode(outputs),
            "output_type": output_type,
            "output_nullable": nullable,
            "evaluated": len(missing),
        }

    def capture(self, message: dict[str, Any]) -> dict[str, Any]:
        """The original's arguments as Spark delivers them, for plain-Python coverage and mutation runs."""
        from aether_mcp.evaluation.target_evaluation import BadRows, capture_inputs

        prepared = self._prepare(message)
        if isinstance(prepared, dict):
            return prepared
        workspace, rows = prepared
        with self.session_lock:
            try:
                captured = capture_inputs(self.spark, workspace.config, rows)
            except BadRows as exc:
                return {"ok": False, "error_kind": "rows", "message": str(exc)}
            except Exception as exc:  # Spark could not deliver these rows to a Python UDF at all
                return {"ok": False, "error_kind": "target", "message": f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
        return {"ok": True, "captured": captured}

    def audit(self, message: dict[str, Any]) -> dict[str, Any]:
        """The candidate run under watch (see target_evaluation.audit_target)."""
        from aether_mcp.evaluation.target_evaluation import TargetError, audit_target

        target = str(message.get("target", ""))
        if not target.startswith("candidate:"):
            return {"ok": False, "error_kind": "refused", "message": "only candidates are audited"}
        prepared = self._prepare(message)
        if isinstance(prepared, dict):
            return prepared
        workspace, small = prepared
        large = value_codec.decode(message.get("rows_large", []))
        with self.session_lock:
            try:
                report = audit_target(self.spark, workspace.path, workspace.config, target, small, large)
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc), "restart": True}
        return {"ok": True, "report": value_codec.encode(report)}

    def plan(self, message: dict[str, Any]) -> dict[str, Any]:
        """A sql candidate's plan profile over a Parquet file (see plan_profile); the query is never run."""
        from aether_mcp.evaluation.target_evaluation import TargetError, load_target, plan_target

        target = str(message.get("target", ""))
        prepared = self._prepare(message)
        if isinstance(prepared, dict):
            return prepared
        workspace, _rows = prepared
        with self.session_lock:
            try:
                loaded = self._loaded(workspace, target, load_target)
                if loaded.target_kind != "sql":
                    return {"ok": False, "error_kind": "refused", "message": f"{target} is not a sql candidate"}
                profile = plan_target(self.spark, loaded, str(message.get("data", "")))
            except TargetError as exc:
                return {"ok": False, "error_kind": "target", "message": str(exc), "restart": exc.in_driver}
            except Exception as exc:  # a plan that does not analyse is the candidate's problem
                return {"ok": False, "error_kind": "target", "message": f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
        return {"ok": True, "profile": profile}

    def _prepare(self, message: dict[str, Any]):
        """(workspace, rows) of a request once Spark is ready, or the error reply to send instead."""
        from aether_mcp.path_guard import SandboxRoot
        from aether_mcp.workspace import Workspace

        try:
            path = Path(str(message["workspace"]))
            workspace = Workspace(SandboxRoot(path), path)
            rows = value_codec.decode(message.get("rows", []))
        except Exception as exc:
            return {"ok": False, "error_kind": "refused", "message": f"bad request: {exc}"}
        if not isinstance(rows, list):
            return {"ok": False, "error_kind": "rows", "message": "rows must be a list of argument rows"}
        if self.role == "reference" and not workspace.integrity().intact:
            return {"ok": False, "error_kind": "refused", "message": f"workspace protected files changed: {workspace.integrity().describe()}"}
        self.spark_ready.wait()
        if self.spark is None:
            return {"ok": False, "error_kind": "spark", "message": self.spark_error or "Spark is not available"}
        return workspace, rows

    def _loaded(self, workspace, target: str, load_target):
        """A target prepared once per content: the original, or a candidate file as it is now."""
        from aether_mcp.candidates import candidate_path
        from aether_mcp.workspace import ORIGINAL_MODULE

        path = workspace.path / ORIGINAL_MODULE if target == "original" else candidate_path(workspace, target)
        try:
            content = path.read_bytes()
        except OSError:
            content = b""
        key = hashlib.sha256(b"\0".join([str(workspace.path).encode(), target.encode(), content, workspace.config.model_dump_json().encode()])).hexdigest()
        if key not in self.loaded_targets:
            if len(self.loaded_targets) > 64:
                self.loaded_targets.clear()
            self.loaded_targets[key] = load_target(workspace.path, workspace.config, target)
        return self.loaded_targets[key]

    @staticmethod
    def _cache_keys(workspace, source_digest: str, rows: list[Any]) -> list[str]:
        context = source_digest + workspace.config.model_dump_json()
        return [hashlib.sha256((context + value_codec.dumps(row)).encode()).hexdigest() for row in rows]


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        while True:
            try:
                message = receive_message(self.request)
            except (ConnectionError, ValueError, OSError):
                return
            if message is None:
                return
            try:
                reply = self.server.worker.handle(message)
            except Exception as exc:  # a worker bug: report it, keep serving
                traceback.print_exc()
                reply = {"ok": False, "error_kind": "internal", "message": f"{exc.__class__.__name__}: {exc}"}
            try:
                send_message(self.request, reply)
            except OSError:
                return


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    worker: SparkWorker


def _exit_when_orphaned(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(1.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="aether_mcp.evaluation.spark_worker")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--role", choices=("reference", "candidate"), required=True)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--conf-json", default="{}")
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    threading.Thread(target=_exit_when_orphaned, args=(args.parent_pid,), daemon=True).start()
    worker = SparkWorker(args.role, args.master, json.loads(args.conf_json))
    server = _Server(args.socket, _Handler)
    server.worker = worker
    threading.Thread(target=worker.start_spark, daemon=True).start()
    print(f"aether-mcp {args.role} worker listening on {args.socket}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
