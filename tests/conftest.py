"""Shared fixtures: one Spark worker pool for the whole session, sandbox roots, a small job."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

# The manifest key and the record of drawn seeds must not land in the developer's home; set before any workspace
# exists. The folder stays after the run, so that a failing draw can be replayed from its seeds (see draws.py);
# those of runs two days old are removed (never a folder another run on the machine may still be using).
# `make test` runs the tests in two pytest-xdist workers: each has a state folder of its own (a manifest key of its
# own) inside the run's folder, which the main process made before it started them and names in the summary.
STATE_PREFIX = "aether-test-state-"
RUN_STATE_ENV = "AETHER_MCP_TEST_RUN_STATE"
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _xdist_worker and os.environ.get(RUN_STATE_ENV):
    _state = Path(os.environ[RUN_STATE_ENV]) / _xdist_worker
    _state.mkdir(mode=0o700)
else:
    for _old in Path(tempfile.gettempdir()).glob(f"{STATE_PREFIX}*"):
        if time.time() - _old.stat().st_mtime > 2 * 86400:
            shutil.rmtree(_old, ignore_errors=True)
    _state = Path(tempfile.mkdtemp(prefix=STATE_PREFIX))
    os.environ[RUN_STATE_ENV] = str(_state)
os.environ["AETHER_MCP_STATE_DIR"] = str(_state)
# Servers the tests start use the shared pool or start workers on first use; one test checks the warm start.
os.environ["AETHER_MCP_WARM_START"] = "0"
# The benchmark's and validate_on_data's applications compile with the quick compiler, as the judging workers do:
# the suite's timed runs are short and no test asserts a timing (a third less CPU over those tests). One test runs
# the benchmark with the optimizing compiler, as users get it by default, and each result names its compiler.
os.environ["AETHER_MCP_BENCH_JIT"] = "quick"

from aether_mcp.path_guard import SandboxRoot  # noqa: E402
from aether_mcp.processes.worker_pool import WorkerPool  # noqa: E402
from aether_mcp.tools import workspaces  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
# (folder, UDF, arg_types for init_workspace, the hand-written equivalent candidate)
EXAMPLE_UDFS = [
    ("loyalty_pricing", "loyalty_discount", {"age": "int"}, "discount_sql"),
    ("contact_cleanup", "normalize_email", {"raw": "string"}, "email_vectorized"),
    ("delivery_geo", "haversine_km", {"lat1": "double", "lon1": "double", "lat2": "double", "lon2": "double"}, "haversine_vectorized"),
]

SHIPPING_JOB = (Path(__file__).parent / "jobs" / "shipping.py").read_text()

SHIPPING_CASES = textwrap.dedent(
    '''
    CASES = [
        {"args": [1.0, False], "expected": 4.99, "why": "light parcel"},
        {"args": [2.0, False], "expected": 4.99, "why": "2 kg is the first heavy weight"},
        {"args": [4.0, True], "expected": 15.98, "why": "heavy express doubles"},
        {"args": [None, True], "expected": None, "why": "null weight"},
        {"args": [-1.0, False], "raises": "ValueError", "why": "non-positive weight raises"},
    ]
    '''
)

SQL_CANDIDATE = textwrap.dedent(
    '''
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
        checked = F.when(weight <= 0, F.raise_error(F.lit("weight must be positive"))).otherwise(fee)
        return F.when(weight.isNull(), F.lit(None).cast("double")).when(express, checked * 2).otherwise(checked)
    '''
)

VECTORIZED_CANDIDATE = textwrap.dedent(
    '''
    import numpy as np
    import pandas as pd

    TARGET = "vectorized"


    def evaluate(weight, express):
        missing = weight.isna().to_numpy()
        w = weight.to_numpy(dtype="float64", na_value=1.0)
        if (w <= 0).any():
            raise ValueError("weight must be positive")
        fee = np.where(w < 2.0, 4.99, 4.99 + (w - 2.0) * 1.5)
        fee = np.where(express.to_numpy(dtype=bool, na_value=False), fee * 2, fee)
        return pd.Series(pd.arrays.FloatingArray(fee, missing))
    '''
)


SPARK_FIXTURES = {"workers", "standalone_cluster", "connect_server"}


def pytest_terminal_summary(terminalreporter):
    """Where this run's seeds are: AETHER_MCP_SEEDS with one call's seeds replays its draws."""
    from aether_mcp import draws

    records = sorted(Path(os.environ[RUN_STATE_ENV]).glob(f"**/{draws.RECORD_FOLDER}"))  # this process's, or each xdist worker's
    calls = {entry["call"] for record in records for path in record.glob("*.jsonl") for entry in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    if records:
        where = ", ".join(map(str, records))
        terminalreporter.write_line(f"seeds drawn by {len(calls)} judge calls: {where} (replay one with {draws.PIN_VARIABLE}, see aether_mcp/draws.py)")


def pytest_collection_modifyitems(config, items):
    """A test that asks for a Spark fixture is slow (so `make check` leaves it to `make test`).
    GPU-marked tests run only where the GPU backend can: elsewhere they are skipped, saying why."""
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    from aether_mcp.backend import gpu_problem

    problem = gpu_problem("kernel")
    if problem is None:
        return
    skip = pytest.mark.skip(reason=f"no GPU backend here: {problem}; scripts/gpu_check.sh runs these on an NVIDIA machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def workers():
    """One pool, so every Spark test in the session shares warm SparkSessions."""
    pool = WorkerPool()
    yield pool
    pool.close()


@pytest.fixture
def root(tmp_path: Path) -> SandboxRoot:
    directory = tmp_path / "root"
    (directory / "jobs").mkdir(parents=True)
    (directory / "jobs" / "shipping.py").write_text(SHIPPING_JOB)
    return SandboxRoot(directory)


@pytest.fixture
def workspace(root: SandboxRoot) -> str:
    """A fresh workspace for `shipping_fee`, with the behaviour cases written."""
    created = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee")
    (Path(created.workspace) / "tests" / "cases.py").write_text(SHIPPING_CASES)
    return created.workspace


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A Spark standalone master and one worker on 127.0.0.1, shared by the session's tests (each
    application ends with its test), stopped (process groups killed) at the end."""
    import signal
    import subprocess

    import pyspark

    tmp_path = tmp_path_factory.mktemp("standalone")
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(tmp_path), "SPARK_WORKER_DIR": str(tmp_path / "work")}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    started = []
    master_log = tmp_path / "master.log"
    for argv, log in (
        (["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())], master_log),
        (["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", str(_free_port())], tmp_path / "worker.log"),
    ):
        with open(log, "wb") as out:
            started.append(subprocess.Popen([str(home / "bin" / "spark-class"), *argv], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        if log == master_log:
            deadline = time.monotonic() + 60
            while b"Starting Spark master" not in master_log.read_bytes() and time.monotonic() < deadline:
                time.sleep(0.3)
    deadline = time.monotonic() + 90
    while b"Registering worker" not in master_log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert b"Registering worker" in master_log.read_bytes(), master_log.read_text()[-2000:]
    yield url
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(10)


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A Spark Connect server on 127.0.0.1 (local[2] behind it), started from PySpark's own jars, shared
    by the session's tests (each with a session of its own); stopped at the end."""
    import signal
    import subprocess
    import sys

    import pyspark

    tmp_path = tmp_path_factory.mktemp("connect")
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    port = _free_port()
    log = tmp_path / "connect-server.log"
    argv = [
        str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
        "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.ui.enabled=false", "--conf", f"spark.local.dir={tmp_path / 'connect-local'}",
        "--driver-java-options", "-XX:TieredStopAtLevel=1", "spark-internal",  # short jobs, no timing asserted: the quick compiler
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while b"Spark Connect server started" not in log.read_bytes() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.3)
    assert b"Spark Connect server started" in log.read_bytes(), log.read_text()[-3000:]
    yield f"sc://127.0.0.1:{port}"
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(10)
