"""A Spark worker process's plumbing: one warm SparkSession, requests on a Unix socket, a token on each.

The reference worker and the candidate worker both run on this. Neither reads a workspace: every
request carries its context (the workspace config, the target, and the exact source the server
read and checked), or names a context bound earlier (`bind`, for a test run's requests). A request
without the worker's token (which only the server, and the test run it starts, know) is refused,
so agent code that finds a worker's socket cannot use it. A worker exits when the server goes
away (its output pipe's reader closes), and serves requests one at a time on its session.

A request may carry a `request_id`: its Spark jobs run in that job group, and `cancel` (`of` the id)
stops them until the request ends (a request still waiting for the session gives up when it gets
it) and says whether it ended, so a cancelled call leaves the worker warm for the next one.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import json
import math
import os
import secrets
import select
import socketserver
import sys
import threading
import time
import traceback
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from aether_mcp.evaluation.spark_errors import explain
from aether_mcp.wire import value_codec
from aether_mcp.wire.worker_protocol import receive_message, send_message

TOKEN_ENV = "AETHER_WORKER_TOKEN"
CONTROL_ENV = "AETHER_WORKER_CONTROL"  # the server's alone: it names requests and cancels them
MAX_BOUND_CONTEXTS = 32


@dataclass(frozen=True)
class Context:
    """What to evaluate: the workspace config, the target and its source exactly as the server read it."""

    config: Any  # WorkspaceConfig
    target: str
    source: str
    filename: str

    @classmethod
    def from_message(cls, data: Any) -> Context:
        from aether_mcp.workspace import WorkspaceConfig

        if not isinstance(data, dict):
            raise ValueError("context must be an object")
        return cls(WorkspaceConfig.model_validate(data["config"]), str(data["target"]), str(data["source"]), str(data["filename"]))


class RequestCancelled(Exception):
    """The request was cancelled before it reached the session."""


class _Requests:
    """The requests running now, by id, and those cancelled; the id of the request this thread serves."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.running: set[str] = set()
        self.cancelled: set[str] = set()
        self.here = threading.local()

    @contextlib.contextmanager
    def serving(self, request_id: str | None) -> Iterator[None]:
        self.here.request_id = request_id
        if request_id is not None:
            with self.changed:
                self.running.add(request_id)
        try:
            yield
        finally:
            self.here.request_id = None
            if request_id is not None:
                with self.changed:
                    self.running.discard(request_id)
                    self.cancelled.discard(request_id)
                    self.changed.notify_all()

    def current(self) -> str | None:
        return getattr(self.here, "request_id", None)

    def cancel(self, request_id: str) -> bool:
        """Mark the request cancelled (one that has not arrived yet too: it gives up when it does); True while it runs."""
        with self.changed:
            if len(self.cancelled) > 1000:  # ids of requests that never arrived
                self.cancelled = {known for known in self.cancelled if known in self.running}
            self.cancelled.add(request_id)
            return request_id in self.running

    def is_cancelled(self) -> bool:
        request_id = self.current()
        with self.changed:
            return request_id is not None and request_id in self.cancelled

    def settle(self, request_id: str, wait_s: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: request_id not in self.running, timeout=wait_s)


class _SessionLock:
    """The session's lock; a cancelled request that gets it gives it back at once and ends."""

    def __init__(self, requests: _Requests) -> None:
        self._lock = threading.Lock()
        self._requests = requests

    def __enter__(self) -> None:
        while not self._lock.acquire(timeout=0.1):  # a request cancelled while it waits gives up waiting
            if self._requests.is_cancelled():
                raise RequestCancelled("the request was cancelled while it waited for the session")
        if self._requests.is_cancelled():
            self._lock.release()
            raise RequestCancelled("the request was cancelled before it ran")

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class SparkWorker:
    """One warm SparkSession; subclasses add the operations of their role."""

    role = ""
    operations: tuple[str, ...] = ()

    def __init__(self, master: str, conf: dict[str, str]) -> None:
        self.master = master
        self.conf = conf
        self.requests = _Requests()
        self.session_lock = _SessionLock(self.requests)
        self.spark = None
        self.spark_error: str | None = None
        self.spark_ready = threading.Event()
        self.bound: OrderedDict[str, Context] = OrderedDict()
        self.warm = False  # run warm_up before answering: set for workers started ahead of any request

    def session_conf(self) -> dict[str, str]:
        return self.conf

    def own_daemon(self) -> bool:
        """Whether Spark starts this role's Python workers from a daemon of ours (see evaluation/daemon_start)."""
        return False

    def start_spark(self) -> None:
        from aether_mcp.evaluation import daemon_start, target_evaluation
        from aether_mcp.evaluation.spark_session import create_session

        target_evaluation.request_cancelled = self.requests.is_cancelled

        try:
            self.spark = create_session(self.master, self.session_conf(), app_name=f"aether-mcp-{self.role}", quick_jit=True)
            if self.own_daemon():  # before any Python function: each carries the environment
                daemon_start.tell_daemons(self.spark, self.master)
            if self.warm:
                self.warm_up()
        except Exception as exc:  # reported to every request, and the server restarts the worker
            self.spark_error = f"Spark failed to start: {exc.__class__.__name__}: {explain(exc)}"
            traceback.print_exc()
        finally:
            self.spark_ready.set()

    def warm_up(self) -> None:
        """Run the role's request path once as the worker starts (see evaluation/warm_up); a failure is left to the first request."""

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "role": self.role, "spark_ready": self.spark_ready.is_set() and self.spark is not None}
        if op == "cancel":
            wait_s = float(message.get("wait_s", 10))
            return {"ok": True, "settled": self.cancel(str(message.get("of", "")), min(wait_s, 60.0) if math.isfinite(wait_s) and wait_s >= 0 else 10.0)}
        if op == "bind":
            try:
                context = Context.from_message(message.get("context"))
            except Exception as exc:
                return refused(f"bad context: {exc}")
            context_id = secrets.token_hex(16)
            self.bound[context_id] = context
            while len(self.bound) > MAX_BOUND_CONTEXTS:
                self.bound.popitem(last=False)
            return {"ok": True, "context_id": context_id}
        if op in self.operations:
            return getattr(self, op)(message)
        return refused(f"unknown request {op!r}")

    def leave_job_group(self, request_id: str | None) -> None:
        """This thread's later jobs (another message on the same connection) belong to no request."""
        if request_id is not None and self.spark is not None:
            with contextlib.suppress(Exception):
                self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    def cancel(self, request_id: str, wait_s: float) -> bool:
        """Stop request `request_id`: its Spark jobs, again as it starts more (a failed batch is retried row by row), until it ends; True once it has, within `wait_s`."""
        if not self.requests.cancel(request_id):
            return True
        deadline = time.monotonic() + wait_s
        while True:
            if self.spark is not None:
                self.spark.sparkContext.cancelJobGroup(request_id)
            if self.requests.settle(request_id, min(0.25, max(deadline - time.monotonic(), 0.0))):
                return True
            if time.monotonic() >= deadline:
                return False

    def context(self, message: dict[str, Any]) -> Context | dict[str, Any]:
        """The request's context (given inline or bound earlier), or the error reply."""
        if "context_id" in message:
            context = self.bound.get(str(message["context_id"]))
            return context if context is not None else refused("unknown context_id: the test run's context expired; run the tests again")
        try:
            return Context.from_message(message.get("context"))
        except Exception as exc:
            return refused(f"bad request: {exc}")

    def ready(self) -> dict[str, Any] | None:
        """None once Spark is up, else the error reply to send."""
        while not self.spark_ready.wait(0.1):
            if self.requests.is_cancelled():
                raise RequestCancelled("the request was cancelled while Spark started")
        if self.spark is None:
            return {"ok": False, "error_kind": "spark", "message": self.spark_error or "Spark is not available"}
        request_id = self.requests.current()
        if request_id is not None:  # this thread's Spark jobs belong to the request, so cancel can stop them
            self.spark.sparkContext.setJobGroup(request_id, "aether-mcp request", interruptOnCancel=True)
        return None

    def request_rows(self, message: dict[str, Any]) -> list[Any] | dict[str, Any]:
        """The request's argument rows once Spark is up, or the error reply to send."""
        rows = value_codec.decode(message.get("rows", []))
        if not isinstance(rows, list):
            return {"ok": False, "error_kind": "rows", "message": "rows must be a list of argument rows"}
        return self.ready() or rows


def refused(message: str) -> dict[str, Any]:
    return {"ok": False, "error_kind": "refused", "message": message}


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
            if not hmac.compare_digest(str(message.pop("token", "")).encode(), self.server.token.encode()):
                reply = refused("this worker answers only the server that started it")
            else:
                # Request ids and cancels come only from the server (the control token): a test run, which holds the
                # token but not the control token, can neither name a request nor cancel one.
                controlled = hmac.compare_digest(str(message.pop("control", "")).encode(), self.server.control.encode())
                request_id = message.pop("request_id", None) if controlled else None
                message.pop("request_id", None)
                try:
                    if message.get("op") == "cancel" and not controlled:
                        reply = refused("only the server that started this worker may cancel its requests")
                    else:
                        try:
                            with self.server.worker.requests.serving(str(request_id) if request_id is not None else None):
                                reply = self.server.worker.handle(message)
                        finally:
                            self.server.worker.leave_job_group(request_id)
                except RequestCancelled as exc:
                    reply = {"ok": False, "error_kind": "cancelled", "message": str(exc)}
                except Exception as exc:  # a worker bug or a cancelled Spark job: report it, keep serving
                    traceback.print_exc()
                    reply = {"ok": False, "error_kind": "internal", "message": f"{exc.__class__.__name__}: {exc}"}
            try:
                send_message(self.request, reply)
            except OSError:
                return


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    worker: SparkWorker
    token: str
    control: str


def _exit_when_orphaned() -> None:
    """Exit once nobody reads this process's output: the server that started it is gone.

    A pipe's write end polls as an error once its reader closed, wherever the reader lives (a
    parent-PID check cannot see across a PID namespace).
    """
    poller = select.poll()
    poller.register(sys.stdout.fileno(), 0)
    while True:
        for _, flags in poller.poll(1000):
            if flags & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                os._exit(0)
        time.sleep(0.5)


def run(worker_class: type[SparkWorker], argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"aether-mcp {worker_class.role} worker")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--conf-json", default="{}")
    parser.add_argument("--warm-up", action="store_true", help="run the request path once on a built-in UDF before answering")
    args = parser.parse_args(argv)
    # The token must not reach the JVM or Spark's Python workers, which inherit this environment.
    token = os.environ.pop(TOKEN_ENV, "")
    control = os.environ.pop(CONTROL_ENV, "") or secrets.token_hex(32)  # without one, no request can be named or cancelled
    if not token:
        print(f"{TOKEN_ENV} is not set: a worker answers only the server that starts it", file=sys.stderr)
        sys.exit(2)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    threading.Thread(target=_exit_when_orphaned, daemon=True).start()
    worker = worker_class(args.master, json.loads(args.conf_json))
    worker.warm = args.warm_up
    server = _Server(args.socket, _Handler)
    server.worker = worker
    server.token = token
    server.control = control
    threading.Thread(target=worker.start_spark, daemon=True).start()
    print(f"aether-mcp {worker_class.role} worker listening on {args.socket}", flush=True)
    server.serve_forever()
