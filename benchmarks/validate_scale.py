"""validate_on_data at scale: rows per second and the drivers' peak memory, on a standalone cluster.

Starts a Spark standalone master and one worker on 127.0.0.1 (from PySpark's own jars), writes
Parquet data for the shipping-fee UDF at each row count, and validates a vectorized candidate
against the original over it. While it runs, the resident memory of the driver side (each Spark
application's Python process and its JVM, everything this process started except the cluster and
its executors) is sampled every 0.2 s; nothing is collected to a driver, so its peak must not grow
with the rows.

    .venv/bin/python benchmarks/validate_scale.py --rows 1000000 10000000
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
CLUSTER_PROCESSES = ("deploy.master.Master", "deploy.worker.Worker", "CoarseGrainedExecutorBackend", "pyspark.daemon", "pyspark.worker", "python_daemon")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--cores", type=int, default=2)
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aether-validate-bench-"))
    os.environ["AETHER_MCP_STATE_DIR"] = str(base / "state")
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from conftest import SHIPPING_JOB, VECTORIZED_CANDIDATE

    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.processes.worker_pool import WorkerPool
    from aether_mcp.tools import workspaces
    from aether_mcp.tools.cheat_audit import audit_candidate
    from aether_mcp.tools.data_validation import validate_on_data

    (base / "root" / "jobs").mkdir(parents=True)
    (base / "root" / "jobs" / "shipping.py").write_text(SHIPPING_JOB)
    root = SandboxRoot(base / "root")
    workspace = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee").workspace
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    # a candidate runs on a cluster only once audit_candidate passed its current bytes here (not timed)
    pool = WorkerPool()
    try:
        audit = audit_candidate(root, pool, workspace, "fee")
    finally:
        pool.close()
    assert audit.verdict.startswith("PASS"), audit.reasons
    cluster, master = _cluster(base, options.cores)
    print(f"{master}, {options.cores} cores, {os.cpu_count()} CPUs on this machine")
    print("| rows | validate_on_data | rows/s | original s | candidate s | driver peak RSS |")
    print("|---|---|---|---|---|---|")
    try:
        for rows in options.rows:
            rng = np.random.default_rng(rows)
            data = base / "root" / "data" / f"parcels_{rows}"
            data.mkdir(parents=True)
            chunk = 1_000_000
            for part, start in enumerate(range(0, rows, chunk)):
                n = min(chunk, rows - start)
                weight = rng.uniform(0.1, 40.0, n)
                pq.write_table(pa.table({"weight": pa.array(weight, mask=rng.random(n) < 0.02), "express": pa.array(rng.random(n) < 0.5)}), data / f"part-{part:04d}.parquet")
            peak = _Peak()
            peak.start()
            started = time.monotonic()
            result = validate_on_data(root, workspace, "fee", f"data/parcels_{rows}", master=master, timeout_s=3600)
            seconds = time.monotonic() - started
            peak.stop()
            assert result.verdict == "equal" and result.rows == rows, result
            print(f"| {rows:,} | {seconds:.1f} s | {rows / seconds:,.0f} | {result.original.seconds:.1f} | {result.candidate_run.seconds:.1f} | {peak.peak / 2**20:.0f} MiB |", flush=True)
            shutil.rmtree(data)
    finally:
        for process in cluster:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(base, ignore_errors=True)


class _Peak:
    """The largest summed resident memory of this process's descendants that are not the cluster's."""

    def __init__(self) -> None:
        self.peak = 0
        self.running = threading.Event()

    def start(self) -> None:
        self.running.set()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.running.clear()
        self.thread.join(5)

    def _sample(self) -> None:
        while self.running.is_set():
            self.peak = max(self.peak, sum(rss for _pid, rss in _driver_side(os.getpid())))
            time.sleep(0.2)


def _driver_side(root_pid: int) -> list[tuple[int, int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], list(children.get(root_pid, []))
    while stack:
        pid = stack.pop()
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            rss = next(int(line.split()[1]) * 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
        if any(name in command for name in CLUSTER_PROCESSES):
            continue  # the cluster and its executors: their memory is the cluster's, not a driver's
        found.append((pid, rss))
        stack += children.get(pid, [])
    return found


def _cluster(base: Path, cores: int) -> tuple[list[subprocess.Popen], str]:
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base), "SPARK_WORKER_DIR": str(base / "work")}
    port, started = _free_port(), []
    url = f"spark://127.0.0.1:{port}"
    master_log = base / "master.log"
    for argv, log in (
        (["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())], master_log),
        (["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores), "--memory", "4g", "--webui-port", str(_free_port())], base / "worker.log"),
    ):
        with open(log, "wb") as out:
            started.append(subprocess.Popen([str(home / "bin" / "spark-class"), *argv], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 90
        wanted = b"Starting Spark master" if log == master_log else b"Registering worker"
        while wanted not in master_log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.3)
    return started, url


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    main()
