"""The server's Spark workers: started on first use, kept warm, restarted after a crash or a timeout.

One worker per (role, Spark master and confs): workspaces with the same confs share a warm
SparkSession. At most `max_workers` run at once; the least recently used one is stopped to make
room. Sockets and worker logs live in a private temporary directory of the server.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.backend import Resolved, has_gpu  # noqa: F401  (has_gpu: re-exported for the tools)
from aether_mcp.processes import subprocess_runner
from aether_mcp.wire import value_codec
from aether_mcp.processes.java_runtime import JavaUnavailable, check_java
from aether_mcp.wire.worker_protocol import RequestCancelled, WorkerUnavailable, request
from aether_mcp.workspace import SparkConfig, Workspace, state_home

ROLES = ("reference", "candidate")




class EvaluationFailed(Exception):
    """A worker could not evaluate the target: `kind` is target, rows, refused, spark, timeout or internal."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Evaluation:
    outputs: list
    output_type: str
    output_nullable: bool


@dataclass
class WorkerHandle:
    role: str
    key: str
    socket_path: str
    log_path: Path
    process: subprocess_runner.RunningProcess
    last_used: float

    def alive(self) -> bool:
        return self.process.alive()


class WorkerPool:
    def __init__(self, max_workers: int = 4, start_timeout_s: float = 60.0) -> None:
        self.max_workers = max_workers
        self.start_timeout_s = start_timeout_s
        self.directory = Path(tempfile.mkdtemp(prefix="aether-mcp-"))
        self._workers: dict[str, WorkerHandle] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.starts = 0

    def get(self, role: str, spark: SparkConfig, backend: str = "cpu") -> WorkerHandle:
        """A live worker for `role` with these Spark settings and candidate backend ("cpu"/"gpu"), started when needed."""
        assert role in ROLES and backend in ("cpu", "gpu")
        key = f"{role}-{'gpu-' if backend == 'gpu' else ''}" + hashlib.sha256(json.dumps([spark.master, spark.conf], sort_keys=True).encode()).hexdigest()[:12]
        with self._lock:
            if self._closed:
                raise ToolError("the server is shutting down; start it again and retry.")
            handle = self._workers.get(key)
            if handle is not None and handle.alive():
                handle.last_used = time.monotonic()
                return handle
            if handle is not None:
                self._stop(handle)
            try:
                check_java(subprocess_runner.child_env())
            except JavaUnavailable as exc:
                raise ToolError(str(exc)) from None
            while len(self._workers) >= self.max_workers:
                self._stop(min(self._workers.values(), key=lambda h: h.last_used))
            handle = self._start(role, key, spark, backend)
            self._workers[key] = handle
            return handle

    def evaluate(
        self,
        role: str,
        workspace: Workspace,
        target: str,
        rows: list,
        *,
        shape: dict | None = None,
        max_isolated: int | None = None,
        typed: bool = False,
        timeout_s: float = 600.0,
        cancel: threading.Event | None = None,
        backend: str = "cpu",
    ) -> Evaluation:
        """Outputs of `target` on `rows` from the `role` worker; a worker that times out or dies is replaced."""
        handle = self.get(role, workspace.config.spark, backend)
        message = {"op": "evaluate", "workspace": str(workspace.path), "target": target, "rows": value_codec.encode(rows)}
        if shape:
            message["shape"] = shape
        if max_isolated:
            message["max_isolated"] = max_isolated
        if typed:
            message["typed"] = True
        reply = self._request(handle, role, message, f"evaluating {target}", timeout_s, cancel)
        return Evaluation(value_codec.decode(reply["outputs"]), str(reply["output_type"]), bool(reply.get("output_nullable", True)))

    def audit(self, workspace: Workspace, target: str, small: list, large: list, *, timeout_s: float = 600.0, cancel: threading.Event | None = None, backend: str = "cpu") -> dict:
        """The candidate run under watch in the candidate worker (the watch stays installed but idle)."""
        handle = self.get("candidate", workspace.config.spark, backend)
        message = {"op": "audit", "workspace": str(workspace.path), "target": target, "rows": value_codec.encode(small), "rows_large": value_codec.encode(large)}
        reply = self._request(handle, "candidate", message, f"auditing {target}", timeout_s, cancel)
        return value_codec.decode(reply["report"])

    def plan(self, workspace: Workspace, target: str, data: str, *, timeout_s: float = 300.0, cancel: threading.Event | None = None) -> dict:
        """A sql candidate's plan profile over the Parquet file `data`, from the candidate worker."""
        handle = self.get("candidate", workspace.config.spark)
        message = {"op": "plan", "workspace": str(workspace.path), "target": target, "data": data}
        return self._request(handle, "candidate", message, f"reading the plan of {target}", timeout_s, cancel)["profile"]

    def _request(self, handle: WorkerHandle, role: str, message: dict, what: str, timeout_s: float, cancel: threading.Event | None) -> dict:
        """One request to a worker; a worker that times out, dies or is cancelled is replaced."""
        try:
            reply = request(handle.socket_path, message, timeout_s=timeout_s, cancel=cancel)
        except RequestCancelled:
            self.discard(handle)
            raise EvaluationFailed("cancelled", f"{what} was cancelled; its Spark worker was stopped") from None
        except WorkerUnavailable as exc:
            self.discard(handle)
            timed_out = "timed out" in str(exc) or "timeout" in str(exc)
            kind = "timeout" if timed_out else "internal"
            reason = f"did not finish within {timeout_s:.0f}s" if timed_out else f"lost its Spark worker ({exc})"
            raise EvaluationFailed(kind, f"{what} {reason}; the worker was stopped and the next call starts a fresh one") from None
        if not reply.get("ok"):
            kind = str(reply.get("error_kind", "internal"))
            if role == "candidate" and (reply.get("restart") or kind == "internal"):
                # Candidate code failed inside the worker's own process: it may have left state behind.
                self.discard(handle)
            raise EvaluationFailed(kind, str(reply.get("message")))
        return reply

    def capture(self, workspace: Workspace, rows: list, *, timeout_s: float = 600.0) -> list:
        """The original's arguments for `rows` as Spark delivers them (decoded)."""
        handle = self.get("reference", workspace.config.spark)
        message = {"op": "capture", "workspace": str(workspace.path), "rows": value_codec.encode(rows)}
        try:
            reply = request(handle.socket_path, message, timeout_s=timeout_s)
        except WorkerUnavailable as exc:
            self.discard(handle)
            raise EvaluationFailed("internal", f"capturing the inputs lost the reference worker ({exc}); the next call starts a fresh one") from None
        if not reply.get("ok"):
            raise EvaluationFailed(str(reply.get("error_kind", "internal")), str(reply.get("message")))
        return [value_codec.loads(item) for item in reply["captured"]]

    def discard(self, handle: WorkerHandle) -> None:
        """Stop a worker that may be stuck (after a timeout); the next `get` starts a fresh one."""
        with self._lock:
            self._stop(handle)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for handle in list(self._workers.values()):
                self._stop(handle)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _start(self, role: str, key: str, spark: SparkConfig, backend: str) -> WorkerHandle:
        self.starts += 1
        socket_path = str(self.directory / f"{key}-{self.starts}.sock")
        log_path = self.directory / f"{key}-{self.starts}.log"
        argv = [
            sys.executable,
            "-I",
            "-B",
            "-m",
            "aether_mcp.evaluation.spark_worker",
            "--socket",
            socket_path,
            "--role",
            role,
            "--master",
            spark.master,
            "--conf-json",
            json.dumps(spark.conf),
            "--parent-pid",
            str(os.getpid()),
        ]
        env = {
            "AETHER_MCP_STATE_DIR": str(state_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYARROW_IGNORE_TIMEZONE": "1",
            "PYTHONHASHSEED": "0",
            # Python-side datetime conversions use the process's zone: make it the session's.
            "TZ": spark.conf.get("spark.sql.session.timeZone", "UTC"),
        }
        # Spark's Python workers inherit it: which backend candidate code runs on (see aether_mcp.backend)
        env.update(Resolved(backend, backend == "cpu", "").env())
        process = subprocess_runner.start(argv, cwd=self.directory, log_path=log_path, env_extra=env)
        handle = WorkerHandle(role, key, socket_path, log_path, process, time.monotonic())
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if not process.alive():
                process.finish_output()
                raise ToolError(
                    f"the {role} Spark worker exited while starting (log: {log_path}); last output: "
                    f"{process.tail()[-800:]!r}. Check that pyspark is installed in {sys.executable}."
                )
            if os.path.exists(socket_path):
                try:
                    request(socket_path, {"op": "ping"}, timeout_s=5)
                    return handle
                except WorkerUnavailable:
                    pass
            time.sleep(0.1)
        process.kill()
        raise ToolError(f"the {role} Spark worker did not start within {self.start_timeout_s:.0f}s (log: {log_path}).")

    def _stop(self, handle: WorkerHandle) -> None:
        handle.process.kill()
        if self._workers.get(handle.key) is handle:
            del self._workers[handle.key]
        try:
            os.unlink(handle.socket_path)
        except OSError:
            pass
