"""The install routes the README gives, from a wheel built here: pipx install, and uvx --from the wheel.

Each installs aether-mcp with its dependencies into an environment of its own and starts
`aether-mcp serve` from there as a host would.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# uv rebuilds pyspark's source distribution for each new wheel path and keeps every build (about 2.4 GB a
# run) in its shared cache: a temporary cache per install, removed when it ends, costs no time and no disk
NO_SHARED_CACHE = {"UV_NO_CACHE": "1"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)], check=True, timeout=600)
    (built,) = out.glob("aether_mcp-*.whl")
    return built


async def _serves(command: str, args: list[str], root: Path, env: dict) -> list[str]:
    params = StdioServerParameters(command=command, args=[*args, "serve", "--root", str(root)], env={**env, "AETHER_MCP_WARM_START": "0"})
    async with Client(params) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        created = await client.call_tool("init_workspace", {"source": "jobs/shipping.py", "udf": "shipping_fee"})
        assert not created.is_error, created.content[0].text
        return names


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_pipx_installs_the_wheel_and_its_server_and_demo_example_work(wheel, root, tmp_path, anyio_backend):
    homes = {"PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin"), "PIPX_MAN_DIR": str(tmp_path / "man")}
    env = {**os.environ, **homes, **NO_SHARED_CACHE}
    subprocess.run([str(BIN / "pipx"), "install", "--python", sys.executable, str(wheel)], check=True, env=env, timeout=900, capture_output=True)
    installed = tmp_path / "bin" / "aether-mcp"
    names = await _serves(str(installed), [], root.path, env)
    assert names[:2] == ["scan_project", "init_workspace"] and "start_run" in names
    # the installed copy, not this checkout, and the demo's example travels in the wheel
    venv_python = tmp_path / "pipx" / "venvs" / "aether-mcp" / "bin" / "python"
    probe = "import aether_mcp.cli as c; print(c.__file__); print(c._bundled_examples())"
    module_file, examples = subprocess.run([str(venv_python), "-c", probe], check=True, capture_output=True, text=True, timeout=120, cwd=tmp_path).stdout.split()
    assert not module_file.startswith(str(REPO)) and (Path(examples) / "loyalty_pricing" / "job.py").is_file()
    assert {p.name for p in (Path(examples) / "loyalty_pricing" / "candidates").iterdir()} >= {"discount_sql.py", "naive_sql.py", "shortcut_udf.py"}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_uvx_runs_the_server_from_the_wheel(wheel, root, anyio_backend):
    uvx = shutil.which("uvx", path=str(BIN)) or str(BIN / "uvx")
    names = await _serves(uvx, ["--python", sys.executable, "--from", str(wheel), "aether-mcp"], root.path, {**os.environ, **NO_SHARED_CACHE})
    assert names[:2] == ["scan_project", "init_workspace"] and "run_status" in names
