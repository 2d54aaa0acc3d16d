"""The real `aether-mcp serve` process over stdio, as Claude Code or Cursor would start it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SHIPPING_CASES
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
CONSOLE_SCRIPT = Path(sys.executable).parent / "aether-mcp"


@pytest.fixture
def anyio_backend():
    return "asyncio"


WORKER_MODULES = (b"aether_mcp.reference.reference_worker", b"aether_mcp.confined.candidate_worker")


def _processes() -> dict[int, tuple[int, list[bytes]]]:
    """pid -> (parent pid, argv) of every process alive now."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\x00")
            parent = int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry.name)] = (parent, argv)
    return found


def _workers_of(server_argv_marker: bytes) -> set[int]:
    """Spark worker processes that descend from the server whose argv holds `server_argv_marker`."""
    processes = _processes()
    servers = {pid for pid, (_, argv) in processes.items() if server_argv_marker in argv and b"serve" in argv}
    workers = set()
    for pid, (parent, argv) in processes.items():
        if not any(module in argv for module in WORKER_MODULES):
            continue
        ancestor = parent
        while ancestor and ancestor not in servers and ancestor in processes:
            ancestor = processes[ancestor][0]
        if ancestor in servers:
            workers.add(pid)
    return workers


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists()}


async def test_serve_over_stdio_runs_the_loop_and_leaves_nothing_running(root):
    params = StdioServerParameters(command=str(CONSOLE_SCRIPT), args=["serve", "--root", str(root.path)], env=dict(os.environ))
    async with Client(params) as client:
        assert client.server_info.name == "aether-mcp"
        names = [t.name for t in (await client.list_tools()).tools]
        assert names[:2] == ["scan_project", "init_workspace"] and "run_tests" in names
        created = await client.call_tool("init_workspace", {"source": "jobs/shipping.py", "udf": "shipping_fee"})
        ws = created.structured_content["workspace"]
        await client.call_tool("write_file", {"workspace": ws, "path": "tests/cases.py", "content": SHIPPING_CASES})
        run = await client.call_tool("run_tests", {"workspace": ws, "target": "original"})
        assert run.structured_content["passed"] == 5, run.content
        escape = await client.call_tool("read_file", {"workspace": ws, "path": "/etc/passwd"})
        assert escape.is_error and "outside the workspace" in escape.content[0].text
        workers = _workers_of(str(root.path).encode())
        assert workers, "the server should have started a Spark worker"
    deadline = time.monotonic() + 30
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(workers), "Spark workers outlived the server"


def test_python_dash_m_entry_point_and_a_bad_root():
    completed = subprocess.run([sys.executable, "-m", "aether_mcp", "serve", "--root", "/no/such/dir"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.strip() == "aether-mcp: --root /no/such/dir is not a directory; give the folder that holds your PySpark jobs."
