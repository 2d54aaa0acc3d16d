"""The install routes the README gives, from a wheel built here: pipx install, and uvx --from the wheel.

Each installs aether-mcp with its dependencies into an environment of its own, with a HOME and package
caches of its own (so it downloads what it needs from the package index), and starts `aether-mcp serve`
from there as a host would.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)], check=True, timeout=600)
    (built,) = out.glob("aether_mcp-*.whl")
    return built


@pytest.fixture
def home():
    """A HOME of the test's own, removed after it: pip's, pipx's and uv's caches and environments land there,
    never in the real HOME (uv rebuilds pyspark's source distribution for each new wheel path and kept every
    build, about 2.4 GB a run, in a shared cache)."""
    folder = Path(tempfile.mkdtemp(prefix="aether-install-home-"))
    env = {**os.environ, "HOME": str(folder), "UV_NO_CACHE": "1"}
    for inherited in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "PIP_CACHE_DIR", "UV_CACHE_DIR", "PIPX_HOME", "PIPX_BIN_DIR"):
        env.pop(inherited, None)
    yield folder, env
    shutil.rmtree(folder, ignore_errors=True)


async def _serves(command: str, args: list[str], root: Path, env: dict) -> list[str]:
    params = StdioServerParameters(command=command, args=[*args, "serve", "--root", str(root)], env={**env, "AETHER_MCP_WARM_START": "0"})
    async with Client(params) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        created = await client.call_tool("init_workspace", {"source": "jobs/shipping.py", "udf": "shipping_fee"})
        assert not created.is_error, created.content[0].text
        return names


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_pipx_installs_the_wheel_and_its_server_and_demo_example_work(wheel, root, home, tmp_path, anyio_backend):
    folder, env = home
    env = {**env, "PIPX_HOME": str(folder / "pipx"), "PIPX_BIN_DIR": str(folder / "bin"), "PIPX_MAN_DIR": str(folder / "man")}
    subprocess.run([str(BIN / "pipx"), "install", "--python", sys.executable, str(wheel)], check=True, env=env, timeout=900, capture_output=True)
    installed = folder / "bin" / "aether-mcp"
    names = await _serves(str(installed), [], root.path, env)
    assert names[:2] == ["scan_project", "init_workspace"] and "start_run" in names
    # the installed copy, not this checkout, and the demo's example travels in the wheel
    venv_python = folder / "pipx" / "venvs" / "aether-mcp" / "bin" / "python"
    probe = "import aether_mcp.cli as c; print(c.__file__); print(c._bundled_examples())"
    module_file, examples = subprocess.run([str(venv_python), "-c", probe], check=True, capture_output=True, text=True, timeout=120, cwd=tmp_path).stdout.split()
    assert not module_file.startswith(str(REPO)) and (Path(examples) / "loyalty_pricing" / "job.py").is_file()
    assert {p.name for p in (Path(examples) / "loyalty_pricing" / "candidates").iterdir()} >= {"discount_sql.py", "naive_sql.py", "shortcut_udf.py"}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_uvx_runs_the_server_from_the_wheel(wheel, root, home, anyio_backend):
    uvx = shutil.which("uvx", path=str(BIN)) or str(BIN / "uvx")
    names = await _serves(uvx, ["--python", sys.executable, "--from", str(wheel), "aether-mcp"], root.path, home[1])
    assert names[:2] == ["scan_project", "init_workspace"] and "run_status" in names
