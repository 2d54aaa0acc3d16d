"""The server's Spark workers: started on first use, kept warm, restarted after a crash or a timeout.

One worker per (role, Spark master and confs, backend): workspaces with the same confs share a
warm SparkSession. Workers read no workspace: each request carries its context, built here from
files the server read (the original from the bytes checked against the signed manifest). The
reference worker runs only the original. The candidate worker runs agent code and is started
confined (aether_mcp.processes.confinement): its Spark scratch, its sockets and its Python
workers' temporary files live in a scratch folder of its own, whose per-call part is emptied
after every request. Each worker answers only requests that carry its token. At most
`max_workers` run at once; the least recently used one is stopped to make room.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp import call_scope
from aether_mcp.backend import Resolved, has_gpu  # noqa: F401  (has_gpu: re-exported for the tools)
from aether_mcp.processes import class_archive, confinement, subprocess_runner, zip_code_cache
from aether_mcp.processes.confinement import ConfinementStatus
from aether_mcp.processes.java_runtime import JavaUnavailable, check_java
from aether_mcp.wire import value_codec
from aether_mcp.wire.worker_protocol import RequestCancelled, WorkerUnavailable, request
from aether_mcp.workspace import ORIGINAL_MODULE, SparkConfig, Workspace, job_constants, state_home
from aether_mcp.workspace.candidates import candidate_path

SETTLE_S = 15.0  # a cancelled request that has not ended this long after its jobs were cancelled costs its worker

ROLES = ("reference", "candidate")
MODULES = {"reference": "aether_mcp.reference.reference_worker", "candidate": "aether_mcp.confined.candidate_worker"}
TOKEN_ENV = "AETHER_WORKER_TOKEN"
CONTROL_ENV = "AETHER_WORKER_CONTROL"  # names and cancels requests; never given to a test run
REFERENCE_UNCONFINED = ConfinementStatus(confined=False, how="the reference worker runs only the original, from verified bytes; it is not confined")


class EvaluationFailed(Exception):
    """A worker could not evaluate the target: `kind` is target, rows, refused, spark, timeout or internal."""

    def __init__(self, kind: str, message: str, events: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.events = events or []


@dataclass
class Evaluation:
    outputs: list
    output_type: str
    output_nullable: bool
    events: list[dict[str, Any]] = field(default_factory=list)
    confinement: ConfinementStatus = field(default_factory=lambda: REFERENCE_UNCONFINED)


@dataclass
class WorkerHandle:
    role: str
    key: str
    socket_path: str
    log_path: Path
    process: subprocess_runner.RunningProcess
    last_used: float
    token: str
    confinement: ConfinementStatus
    call_scratch: Path | None = None  # candidate workers: emptied after every request
    control: str = ""  # the worker's control token: names requests and cancels them
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alive(self) -> bool:
        return self.process.alive()


def context(workspace: Workspace, target: str) -> dict[str, Any]:
    """What a worker needs to evaluate `target`: the config and the source exactly as the server read it."""
    if target == "original":
        source, filename = workspace.verified_original(), str(workspace.path / ORIGINAL_MODULE)
    else:
        path = candidate_path(workspace, target)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EvaluationFailed("target", f"{target.removeprefix('candidate:')}.py cannot be read ({exc})") from None
        source = job_constants.inline(workspace, source, f"candidate/{path.name}")  # the job's constants it imports, as the job gets them
        filename = str(path)
    return {"config": workspace.config.model_dump(mode="json"), "target": target, "source": source, "filename": filename}


class WorkerPool:
    def __init__(self, max_workers: int = 4, start_timeout_s: float = 60.0, forbidden: list[Path] | None = None) -> None:
        self.max_workers = max_workers
        self.start_timeout_s = start_timeout_s
        # Folders confined processes must never read: the server's state, and the root (every workspace).
        self.forbidden = [state_home(), *(forbidden or [])]
        self.directory = Path(tempfile.mkdtemp(prefix="aether-mcp-"))
        # Spark's classes in one archive every JVM maps, made in the background when missing (class_archive)
        class_archive.ensure()
        zip_code_cache.ensure()  # PySpark's zipped modules compiled once, for the judge's fresh daemons (zip_code_cache)
        self._workers: dict[str, WorkerHandle] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.starts = 0

    def get(self, role: str, spark: SparkConfig, backend: str = "cpu", warm_up: bool = False) -> WorkerHandle:
        """A live worker for `role` with these Spark settings and candidate backend ("cpu"/"gpu"), started when needed.

        `warm_up`: a worker started now runs its request path once on a built-in UDF before answering; worth it only
        when nobody waits for it (warm_start), since the first request would wait for the warm-up."""
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
            handle = self._start(role, key, spark, backend, warm_up)
            self._workers[key] = handle
            return handle

    def warm_start(self, spark: SparkConfig) -> list[threading.Thread]:
        """Start the reference and the candidate worker for `spark` in the background, side by side, so the first
        call finds them warm. A worker that fails to start here is started again (and its error reported) on first use."""

        def start(role: str) -> None:
            try:
                self.get(role, spark, warm_up=True)  # the worker answers at once and starts and warms Spark on its own
            except (ToolError, OSError):
                pass

        threads = [threading.Thread(target=start, args=(role,), name=f"aether-warm-{role}", daemon=True) for role in ROLES]
        for thread in threads:
            thread.start()
        return threads

    def ready_roles(self) -> list[str]:
        """The roles of the running workers whose SparkSession is up (and warmed)."""
        with self._lock:
            handles = [handle for handle in self._workers.values() if handle.alive()]
        ready = []
        for handle in handles:
            try:
                if request(handle.socket_path, {"op": "ping", "token": handle.token}, timeout_s=5).get("spark_ready"):
                    ready.append(handle.role)
            except WorkerUnavailable:
                continue
        return sorted(ready)

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
        message: dict[str, Any] = {"op": "evaluate", "context": context(workspace, target), "rows": value_codec.encode(rows)}
        if shape:
            message["shape"] = shape
        if max_isolated:
            message["max_isolated"] = max_isolated
        if typed:
            message["typed"] = True
        reply = self._request(handle, role, message, f"evaluating {target}", timeout_s, cancel)
        return Evaluation(
            value_codec.decode(reply["outputs"]),
            str(reply["output_type"]),
            bool(reply.get("output_nullable", True)),
            list(reply.get("events", [])),
            handle.confinement,
        )

    def audit(
        self,
        workspace: Workspace,
        target: str,
        runs: dict[str, tuple[list, int]],
        *,
        splits: dict[str, list[int]] | None = None,
        timeout_s: float = 600.0,
        cancel: threading.Event | None = None,
        backend: str = "cpu",
    ) -> dict:
        """The candidate run under watch in the candidate worker: each run is (rows, Arrow batch size).

        `splits`: runs whose rows reach the candidate in batches of exactly these lengths."""
        handle = self.get("candidate", workspace.config.spark, backend)
        encoded = {label: {"rows": value_codec.encode(rows), "batch_rows": batch} for label, (rows, batch) in runs.items()}
        message = {"op": "audit", "context": context(workspace, target), "runs": encoded, "splits": splits or {}}
        reply = self._request(handle, "candidate", message, f"auditing {target}", timeout_s, cancel)
        report = value_codec.decode(reply["report"])
        report["confinement"] = handle.confinement
        return report

    def plan(self, workspace: Workspace, target: str, data: str, *, timeout_s: float = 300.0, cancel: threading.Event | None = None) -> dict:
        """A sql candidate's plan profile over the Parquet data at `data`, from the candidate worker.

        The worker cannot read the workspace, so the data is copied into its scratch for the call.
        """
        handle = self.get("candidate", workspace.config.spark)
        assert handle.call_scratch is not None
        with handle.lock:
            handle.in_flight += 1
        copy = handle.call_scratch / "plan-data"
        (shutil.copytree if Path(data).is_dir() else shutil.copyfile)(data, copy)
        message = {"op": "plan", "context": context(workspace, target), "data": str(copy)}
        try:
            return self._request(handle, "candidate", message, f"reading the plan of {target}", timeout_s, cancel)["profile"]
        finally:
            self._done(handle)

    def timing(self, role: str, workspace: Workspace, target: str, data: str, repeats: int, *, timeout_s: float = 600.0, cancel: threading.Event | None = None, steps: bool = False) -> dict:
        """Seconds of `repeats` runs of `target` over the Parquet rows at `data`, cached in the warm `role` worker
        (`steps`: a sql candidate's steps timed too, see cached_timing).

        The candidate worker cannot read the workspace, so there the data is copied into its scratch for the call.
        """
        handle = self.get(role, workspace.config.spark)
        with handle.lock:
            handle.in_flight += 1
        try:
            if handle.call_scratch is not None:
                copy = handle.call_scratch / "timing-data"
                (shutil.copytree if Path(data).is_dir() else shutil.copyfile)(data, copy)
                data = str(copy)
            message = {"op": "timing", "context": context(workspace, target), "data": data, "repeats": repeats, "steps": steps}
            return self._request(handle, role, message, f"timing {target}", timeout_s, cancel)["timed"]
        finally:
            self._done(handle)

    def bind(self, role: str, workspace: Workspace, target: str, backend: str = "cpu") -> tuple[WorkerHandle, str]:
        """A worker and a context id for requests that come from a test run (which holds no source)."""
        handle = self.get(role, workspace.config.spark, backend)
        reply = self._request(handle, role, {"op": "bind", "context": context(workspace, target)}, f"preparing {target}", 60.0, None)
        return handle, str(reply["context_id"])

    def capture(self, workspace: Workspace, rows: list, *, timeout_s: float = 600.0) -> list:
        """The original's arguments for `rows` as Spark delivers them (decoded); the call's cancel event stops it."""
        handle = self.get("reference", workspace.config.spark)
        message = {"op": "capture", "context": context(workspace, "original"), "rows": value_codec.encode(rows)}
        reply = self._request(handle, "reference", message, "capturing the inputs", timeout_s, None)
        return [value_codec.loads(item) for item in reply["captured"]]

    def _request(self, handle: WorkerHandle, role: str, message: dict, what: str, timeout_s: float, cancel: threading.Event | None) -> dict:
        """One request to a worker; a worker that times out, dies or is cancelled is replaced."""
        cancel = call_scope.cancel_event(cancel)
        request_id = secrets.token_hex(12)
        with handle.lock:
            handle.in_flight += 1
        try:
            reply = request(handle.socket_path, {**message, "token": handle.token, "control": handle.control, "request_id": request_id}, timeout_s=timeout_s, cancel=cancel)
        except RequestCancelled:
            if self._settled(handle, request_id):
                raise EvaluationFailed("cancelled", f"{what} was cancelled; its Spark jobs were stopped and the worker stays warm") from None
            self.discard(handle)
            raise EvaluationFailed("cancelled", f"{what} was cancelled; its Spark worker was stopped (the request did not end within {SETTLE_S:.0f}s)") from None
        except WorkerUnavailable as exc:
            self.discard(handle)
            timed_out = "timed out" in str(exc) or "timeout" in str(exc)
            kind = "timeout" if timed_out else "internal"
            reason = f"did not finish within {timeout_s:.0f}s" if timed_out else f"lost its Spark worker ({exc})"
            raise EvaluationFailed(kind, f"{what} {reason}; the worker was stopped and the next call starts a fresh one") from None
        finally:
            self._done(handle)
        if not reply.get("ok"):
            kind = str(reply.get("error_kind", "internal"))
            if role == "candidate" and kind == "internal":
                # The candidate worker failed in its own code: start a fresh one for the next call.
                self.discard(handle)
            raise EvaluationFailed(kind, str(reply.get("message")), list(reply.get("events", [])))
        return reply

    def _settled(self, handle: WorkerHandle, request_id: str) -> bool:
        """Stop a cancelled request's Spark jobs; True once it has ended (within SETTLE_S), so the worker can serve the next call."""
        try:
            reply = request(handle.socket_path, {"op": "cancel", "of": request_id, "wait_s": SETTLE_S, "token": handle.token, "control": handle.control}, timeout_s=SETTLE_S + 10.0)
        except (WorkerUnavailable, RequestCancelled, OSError):
            return False
        return bool(reply.get("ok") and reply.get("settled"))

    def _done(self, handle: WorkerHandle) -> None:
        """One request fewer; once none is running, the call's scratch is emptied (nothing is kept across calls)."""
        with handle.lock:
            handle.in_flight -= 1
            if handle.in_flight == 0 and handle.call_scratch is not None:
                confinement.empty(handle.call_scratch)

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

    def _start(self, role: str, key: str, spark: SparkConfig, backend: str, warm_up: bool = False) -> WorkerHandle:
        self.starts += 1
        class_archive.ensure()  # an archive made since (here or by another server) is used from now on
        if role == "candidate":  # its daemons start once per candidate: worth the second it takes to compile them first
            zip_code_cache.ensure(wait_s=zip_code_cache.MAKE_WAIT_S)
        token = secrets.token_hex(32)
        control = secrets.token_hex(32)
        log_path = self.directory / f"{key}-{self.starts}.log"
        extra = {
            TOKEN_ENV: token,
            CONTROL_ENV: control,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYARROW_IGNORE_TIMEZONE": "1",
            "PYTHONHASHSEED": "0",
            # Python-side datetime conversions use the process's zone: make it the session's.
            "TZ": spark.conf.get("spark.sql.session.timeZone", "UTC"),
            # Spark's Python workers inherit it: which backend candidate code runs on (see aether_mcp.backend)
            **Resolved(backend, backend == "cpu", "").env(),
        }
        call_scratch = None
        if role == "reference":
            socket_path = str(self.directory / f"{key}-{self.starts}.sock")
            argv = self._argv(role, socket_path, spark, warm_up)
            status = REFERENCE_UNCONFINED
            process = subprocess_runner.start(argv, cwd=self.directory, log_path=log_path, env_extra=extra)
        else:
            # a plain temporary folder: no path the candidate's processes see names the harness
            scratch = Path(tempfile.mkdtemp())
            call_scratch = scratch / "call"
            call_scratch.mkdir(parents=True)
            socket_path = str(scratch / "worker.sock")
            policy = confinement.Policy(read=[], write=[str(scratch)])
            argv, status = confinement.wrap(self._argv(role, socket_path, spark, warm_up), policy, self.forbidden, network=confinement.network_need(spark.master))
            env = confinement.environment(scratch, {**extra, "AETHER_CALL_SCRATCH": str(call_scratch)}, confined=status.confined)
            process = subprocess_runner.start(argv, cwd=scratch, log_path=log_path, env=env)
        handle = WorkerHandle(role, key, socket_path, log_path, process, time.monotonic(), token, status, call_scratch, control=control)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if not process.alive():
                process.finish_output()
                raise ToolError(
                    f"the {role} Spark worker exited while starting (log: {log_path}); last output: "
                    f"{process.tail()[-800:]!r}. Check that pyspark is installed in {sys.executable}."
                )
            try:
                request(socket_path, {"op": "ping", "token": token}, timeout_s=5)
                return handle
            except WorkerUnavailable:
                pass
            time.sleep(0.1)
        process.kill()
        raise ToolError(f"the {role} Spark worker did not start within {self.start_timeout_s:.0f}s (log: {log_path}).")

    @staticmethod
    def _argv(role: str, socket_path: str, spark: SparkConfig, warm_up: bool = False) -> list[str]:
        argv = [sys.executable, "-I", "-B", "-m", MODULES[role], "--socket", socket_path, "--master", spark.master, "--conf-json", json.dumps(spark.conf)]
        return argv + (["--warm-up"] if warm_up else [])

    def _stop(self, handle: WorkerHandle) -> None:
        handle.process.kill()
        if self._workers.get(handle.key) is handle:
            del self._workers[handle.key]
        try:
            Path(handle.socket_path).unlink()
        except OSError:
            pass
        if handle.call_scratch is not None:
            shutil.rmtree(handle.call_scratch.parent, ignore_errors=True)
