"""How long an MCP host waits for `tools/list` after starting `aether-mcp serve`, idle and on a busy machine.

Each run starts the real console script over stdio with the SDK's client (the Spark workers' warm
start on, as a host gets it) and times from spawning the process to the `tools/list` answer. "Busy"
runs with as many spinning processes as the machine has cores, started a few seconds before.
Prints the median and range of `--runs` runs each, and the SDK's own import time for comparison.

    .venv/bin/python benchmarks/start_latency.py --runs 5
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

CONSOLE_SCRIPT = Path(sys.executable).parent / "aether-mcp"


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def _time_to_tools_list(root: str) -> float:
    started = time.monotonic()
    params = StdioServerParameters(command=str(CONSOLE_SCRIPT), args=["serve", "--root", root], env=dict(os.environ))
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        elapsed = time.monotonic() - started
        assert tools
    return elapsed


def _sdk_import_s() -> float:
    out = subprocess.run([sys.executable, "-c", "import time; t = time.monotonic(); import mcp.server.mcpserver; print(time.monotonic() - t)"], capture_output=True, text=True, check=True)
    return float(out.stdout)


def _series(root: str, runs: int) -> list[float]:
    return [anyio.run(_time_to_tools_list, root) for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as root:
        idle = _series(root, args.runs)
        spinners = [multiprocessing.Process(target=_spin, args=(600,), daemon=True) for _ in range(cores)]
        for spinner in spinners:
            spinner.start()
        time.sleep(3)
        try:
            busy = _series(root, args.runs)
        finally:
            for spinner in spinners:
                spinner.terminate()
    sdk = statistics.median(_sdk_import_s() for _ in range(3))
    print(f"machine: {cores} cores; the MCP SDK's import alone: {sdk:.2f} s")
    for name, times in (("idle", idle), (f"busy ({cores} spinning processes)", busy)):
        print(f"{name}: tools/list after {statistics.median(times):.2f} s (median of {len(times)}; {min(times):.2f}-{max(times):.2f} s)")


if __name__ == "__main__":
    main()
