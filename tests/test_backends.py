"""Backends: where candidate code runs, what results say about it, and the proof that a GPU ran it.

On a machine without a GPU (CI) every run is on the CPU backend: vectorized candidates on
pandas/NumPy, kernel candidates under numba's CUDA simulator, and every result says so. The GPU
path's judgement of device activity is tested on recorded Nsight Systems reports; the GPU-marked
tests in test_gpu.py run the rest where a GPU is.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import EXAMPLES, REPO
from mcp.server.mcpserver.exceptions import ToolError
from test_profiling import FIXTURES, STAND_IN_NSYS

from aether_mcp import backend
from aether_mcp.parsers import device_counters, nsys_report
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import benchmarking, byte_compare, cheat_audit, device_proof, files, profiling, workspaces
from aether_mcp.tools.suite_runs import run_tests
from aether_mcp.workspace import Workspace

GEO_TYPES = {"lat1": "double", "lon1": "double", "lat2": "double", "lon2": "double"}


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(backend, "has_gpu", lambda: False)


def test_auto_runs_vectorized_candidates_on_pandas_and_kernels_under_the_simulator_without_a_gpu(no_gpu):
    vectorized = backend.resolve("auto", "vectorized")
    kernel = backend.resolve("auto", "kernel")
    assert (vectorized.name, vectorized.simulated) == ("cpu", False)
    assert (kernel.name, kernel.simulated) == ("cpu", True)
    assert "simulated" in kernel.note and "no NVIDIA GPU" in kernel.note
    assert kernel.env() == {"AETHER_BACKEND": "cpu", "NUMBA_ENABLE_CUDASIM": "1"}
    assert backend.resolve("cpu", "kernel").simulated


def test_asking_for_the_gpu_where_there_is_none_says_why_and_what_to_use(no_gpu):
    with pytest.raises(backend.BackendUnavailable, match=r"no NVIDIA GPU.*backend 'cpu'"):
        backend.resolve("gpu", "vectorized")
    with pytest.raises(backend.BackendUnavailable, match="JVM"):
        backend.resolve("gpu", "sql")
    with pytest.raises(backend.BackendUnavailable, match="auto, cpu, gpu"):
        backend.resolve("cuda", "vectorized")


def test_a_gpu_without_the_libraries_names_the_missing_packages_and_the_extra(monkeypatch):
    monkeypatch.setattr(backend, "has_gpu", lambda: True)
    real = backend.importlib.util.find_spec
    monkeypatch.setattr(backend.importlib.util, "find_spec", lambda name: None if name in ("cupy", "cudf") else real(name))
    problem = backend.gpu_problem("vectorized")
    assert all(name in problem for name in ("cupy-cuda12x", "cupy-cuda13x", "aether-mcp[cuda12]", "aether-mcp[cuda13]")) and "cuDF" not in problem.split("(")[0]
    # auto falls back to the CPU and says why; only an explicit "gpu" is refused
    assert backend.resolve("auto", "vectorized").name == "cpu" and "cupy-cuda13x" in backend.resolve("auto", "vectorized").note


def test_cupy_alone_runs_a_vectorized_candidate_on_the_gpu_unless_it_uses_cudf_itself(monkeypatch):
    monkeypatch.setattr(backend, "has_gpu", lambda: True)
    real = backend.importlib.util.find_spec
    monkeypatch.setattr(backend.importlib.util, "find_spec", lambda name: object() if name == "cupy" else None if name == "cudf" else real(name))
    on_gpu = backend.resolve("gpu", "vectorized")
    assert on_gpu.name == "gpu" and "no cuDF here" in on_gpu.note
    assert "cudf-cu13" in backend.gpu_problem("vectorized", needs_cudf=True)
    assert backend.resolve("auto", "vectorized", needs_cudf=True).name == "cpu"
    uses = lambda source: device_proof.uses_cudf(ast.parse(source))  # noqa: E731
    assert uses("from aether_mcp.backend import xdf, xp") and uses("import cudf") and uses("import aether_mcp.backend as b\nb.xdf.Series")
    assert not uses("from aether_mcp.backend import array, series, xp")


def test_on_a_gpu_auto_takes_it_only_for_candidates_written_for_it(tmp_path, monkeypatch):
    monkeypatch.setattr(backend, "gpu_problem", lambda kind, needs_cudf=False: None)  # as on a machine with a GPU and the gpu extra
    shutil.copytree(EXAMPLES / "delivery_geo", tmp_path / "delivery_geo")
    root = SandboxRoot(tmp_path)
    created = workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES)
    opened = Workspace.open_intact(root, created.workspace)
    candidates = EXAMPLES / "delivery_geo" / "candidates"
    files.write_file(root, created.workspace, "candidate/backend.py", (candidates / "haversine_vectorized.py").read_text())
    files.write_file(root, created.workspace, "candidate/kernel.py", (candidates / "haversine_kernel.py").read_text())
    numpy_only = "import numpy as np\nimport pandas as pd\nTARGET = 'vectorized'\n\ndef evaluate(a, b, c, d):\n    return pd.Series(np.zeros(len(a)))\n"
    files.write_file(root, created.workspace, "candidate/numpy_only.py", numpy_only)
    assert device_proof.choose(opened, "candidate:backend", None).name == "gpu"
    assert (device_proof.choose(opened, "candidate:kernel", None).name, device_proof.choose(opened, "candidate:kernel", None).simulated) == ("gpu", False)
    kept = device_proof.choose(opened, "candidate:numpy_only", None)
    assert kept.name == "cpu" and "imports no GPU library" in kept.note
    assert device_proof.choose(opened, "candidate:numpy_only", "gpu").name == "gpu"  # asked for explicitly
    assert device_proof.choose(opened, "candidate:backend", "cpu").name == "cpu"


def test_nothing_imports_the_cuda_libraries_at_start_up():
    code = "import sys, aether_mcp.server, aether_mcp.backend; print(sorted(m for m in ('cupy', 'cudf', 'numba', 'rmm') if m in sys.modules))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert shown == "[]"


def test_the_cpu_backend_keeps_null_and_nan_apart_through_array_series_and_arrow():
    column = pa.array([1.5, None, float("nan"), -0.0], pa.float64())
    series = backend.from_arrow(column)
    values = backend.array(series, "float64", na_value=7.0)
    assert values.tolist()[:2] == [1.5, 7.0] and np.isnan(values[2]) and np.signbit(values[3])
    rebuilt = backend.series(values, null=np.array([False, True, False, False]))
    back = backend.to_arrow(rebuilt, pa.float64())
    assert back.is_null().to_pylist() == [False, True, False, False]
    assert np.isnan(back[2].as_py()) and str(back[3].as_py()) == "-0.0"
    assert backend.series(np.array([1, 2]), null=np.array([True, False])).dtype == pd.Int64Dtype()
    assert backend.name() == "cpu" and backend.allocator() == {}


def test_init_workspace_freezes_the_backend_and_refuses_an_unknown_one(tmp_path):
    shutil.copytree(EXAMPLES / "delivery_geo", tmp_path / "delivery_geo")
    root = SandboxRoot(tmp_path)
    with pytest.raises(ToolError, match="backend must be one of auto, cpu, gpu"):
        workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES, backend="cuda")
    assert not (tmp_path / "aether_workspaces").exists()
    created = workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES, backend="cpu")
    assert tomllib.loads((Path(created.workspace) / "aether.toml").read_text())["backend"] == {"use": "cpu"}


# --- proof of GPU execution, judged on recorded reports ------------------------------------------


def _summary(scenario: str) -> device_counters.Counters:
    return device_counters.from_nsys(_nsys(scenario))


def _nsys(scenario: str) -> nsys_report.NsysSummary:
    return nsys_report.parse_reports(nsys_report.report_paths(FIXTURES / scenario / "profile"), 0.1, 80_000_000, 40_000_000, 5_000_000)


def test_device_work_with_one_copy_of_the_result_back_is_verified():
    assert device_proof.judge(_summary("fused"), rows=10_000_000, calls=1, result_bytes=80_000_000) == []


def test_no_kernel_launch_on_the_gpu_backend_is_a_blocking_problem():
    problems = device_proof.judge(_summary("no_kernels"), rows=1_000_000, calls=1, result_bytes=8_000_000)
    assert [p.rule for p in problems] == ["no_device_work"] and "computed on the host" in problems[0].message


def test_device_to_host_traffic_far_above_the_result_is_a_host_round_trip():
    # 120 MB came back for a 20 MB result: the data went to the host mid-computation
    problems = device_proof.judge(_summary("host_round_trip"), rows=5_000_000, calls=1, result_bytes=20_000_000)
    assert [p.rule for p in problems] == ["host_round_trip"] and "120.0 MB per call" in problems[0].message
    # the same traffic for a result that size is one copy back per call: fine
    assert device_proof.judge(_summary("host_round_trip"), rows=5_000_000, calls=3, result_bytes=40_000_000) == []


def test_about_one_device_to_host_copy_per_row_is_caught_even_when_the_bytes_are_small():
    summary = _nsys("fused").model_copy(deep=True)
    summary.transfers["device_to_host"] = nsys_report.TransferStat(bytes=800_000, time_s=0.9, count=200_000)
    problems = device_proof.judge(device_counters.from_nsys(summary), rows=100_000, calls=2, result_bytes=800_000)
    assert [p.rule for p in problems] == ["host_round_trip"] and "one row at a time" in problems[0].message


def test_no_device_proof_is_claimed_on_the_cpu_backend(tmp_path, no_gpu):
    shutil.copytree(EXAMPLES / "delivery_geo", tmp_path / "delivery_geo")
    root = SandboxRoot(tmp_path)
    created = workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES)
    opened = Workspace.open_intact(root, created.workspace)
    for kind, simulated in (("vectorized", False), ("kernel", True)):
        activity, verified, note = device_proof.prove(opened, "x", backend.resolve("auto", kind), 60, None, lambda *a: None)
        assert activity is None and verified is False and note.startswith("gpu_verified: false")
        assert ("simulator" in note) is simulated


def _geo_with_nsys(tmp_path: Path, monkeypatch, script: str) -> Workspace:
    """A geo workspace with the vectorized candidate as candidate/geo.py, and `script` as the `nsys` on the PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(script)
    (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    shutil.copytree(EXAMPLES / "delivery_geo", tmp_path / "delivery_geo")
    root = SandboxRoot(tmp_path)
    created = workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES)
    files.write_file(root, created.workspace, "candidate/geo.py", (EXAMPLES / "delivery_geo" / "candidates" / "haversine_vectorized.py").read_text())
    return Workspace.open_intact(root, created.workspace)


@pytest.mark.slow
def test_device_activity_is_recorded_from_a_real_profiled_run_of_the_candidate(tmp_path, monkeypatch):
    """The recording path end to end: the candidate's evaluate runs in a child under `nsys`, whose
    reports are then exported and judged. Without a GPU, a stand-in nsys runs the real command and
    hands back a recorded report (here: one where no kernel ran)."""
    opened = _geo_with_nsys(tmp_path, monkeypatch, STAND_IN_NSYS.format(python=sys.executable, fixtures=FIXTURES / "no_kernels"))
    folder = tmp_path / "device"
    folder.mkdir()
    activity = device_proof.record(opened, "geo", backend.CPU.env(), folder, 300, None, lambda *a: None, device_counters.choose_source())
    raw = json.loads((folder / "micro.json").read_text())
    assert raw["backend"] == "cpu" and raw["result_bytes"] == activity.result_bytes > 0  # the candidate really ran, in the child
    assert activity.rows == device_proof.DEVICE_ROWS and activity.kernel_launches == 0
    assert (activity.source, activity.complete) == ("nsys", True) and activity.source_detail.startswith("Nsight Systems")
    assert [p.rule for p in activity.problems] == ["no_device_work"]


# --- the bundled geo example on the CPU backend --------------------------------------------------


@pytest.fixture(scope="module")
def geo(tmp_path_factory, workers):
    directory = tmp_path_factory.mktemp("geo")
    shutil.copytree(EXAMPLES / "delivery_geo", directory / "delivery_geo")
    root = SandboxRoot(directory)
    created = workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES)
    ws = created.workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "delivery_geo" / "cases.py").read_text())
    for name in ("haversine_vectorized", "haversine_kernel"):
        files.write_file(root, ws, f"candidate/{name}.py", (EXAMPLES / "delivery_geo" / "candidates" / f"{name}.py").read_text())
    return root, ws


@pytest.mark.slow
@pytest.mark.parametrize("candidate, simulated", [("haversine_vectorized", False), ("haversine_kernel", True)])
def test_the_geo_candidates_pass_their_tests_and_byte_compare_on_the_cpu_backend_saying_how_they_ran(geo, workers, candidate, simulated, no_gpu):
    root, ws = geo
    if simulated:  # test_examples runs the vectorized one's tests
        tested = run_tests(root, workers, ws, f"candidate:{candidate}")
        assert tested.failed == 0 and tested.errors == 0 and tested.passed >= 1, tested.tests
        assert (tested.backend, tested.simulated) == ("cpu", True) and "simulator" in tested.backend_note
    compared = byte_compare.byte_compare(root, workers, ws, candidate, hidden_rows=400)
    assert compared.equal, (compared.error, compared.mismatches[:3])
    assert (compared.backend, compared.simulated, compared.gpu_verified, compared.device_activity) == ("cpu", simulated, False, None)
    assert ("numba's CUDA simulator" in compared.backend_note) is simulated


@pytest.mark.slow
def test_a_simulated_kernel_is_never_timed_and_the_gpu_is_refused_where_there_is_none(geo, workers, no_gpu):
    root, ws = geo
    with pytest.raises(ToolError, match="simulator.*not timed.*backend='gpu'"):
        benchmarking.run_benchmark(root, workers, ws, "haversine_kernel", rows=1000)
    with pytest.raises(ToolError, match="simulator.*not timed"):
        benchmarking.micro_benchmark(root, ws, "haversine_kernel", rows=1000)
    with pytest.raises(ToolError, match="simulator.*not profiled"):
        profiling.nsys_profile(root, workers, ws, "haversine_kernel", rows=1000)
    gpu_calls = {
        "run_tests": lambda: run_tests(root, workers, ws, "candidate:haversine_vectorized", backend="gpu"),
        "byte_compare": lambda: byte_compare.byte_compare(root, workers, ws, "haversine_vectorized", hidden_rows=10, backend="gpu"),
        "audit_candidate": lambda: cheat_audit.audit_candidate(root, workers, ws, "haversine_vectorized", 1000, backend="gpu"),
        "run_benchmark": lambda: benchmarking.run_benchmark(root, workers, ws, "haversine_vectorized", rows=1000, backend="gpu"),
        "micro_benchmark": lambda: benchmarking.micro_benchmark(root, ws, "haversine_kernel", rows=1000, backend="gpu"),
    }
    runs = lambda: sorted((Path(ws) / ".aether").rglob("*.json"))  # noqa: E731
    before = runs()
    for tool, call in gpu_calls.items():
        with pytest.raises(ToolError, match=r"no NVIDIA GPU.*backend 'cpu'.*nothing was run"):
            call()
        assert runs() == before, f"{tool} ran something before refusing"


# --- the device check script and its micro-benchmark ---------------------------------------------


def test_gpu_check_says_plainly_when_there_is_no_gpu_to_check():
    if any(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this machine has a GPU: scripts/gpu_check.sh runs for real here")
    ended = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh")], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 2 and "no NVIDIA GPU" in ended.stderr and ended.stdout == ""


def test_the_micro_benchmark_compares_every_variant_with_the_row_udf_row_by_row():
    ended = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_micro.py"), "--rows", "20000", "--repeats", "1"], capture_output=True, text=True, timeout=300)
    assert ended.returncode == 0, ended.stderr
    rows = {line.split("|")[1].strip(): line for line in ended.stdout.splitlines() if line.startswith("| ") and "---" not in line}
    assert "reference" in rows["row UDF logic (Python, one row at a time)"]
    assert "bit for bit" in rows["NumPy (vectorized candidate, CPU backend)"]
    problem = backend.gpu_problem("kernel")
    gpu_rows = [line for label, line in rows.items() if label.startswith(("CuPy", "numba"))]
    assert len(gpu_rows) == 2 and all((f"not run: {problem}" in line) if problem else ("ULP" in line or "bit for bit" in line) for line in gpu_rows)


@pytest.mark.slow
def test_a_device_check_that_cannot_run_leaves_the_result_standing_unverified(tmp_path, monkeypatch):
    opened = _geo_with_nsys(tmp_path, monkeypatch, "#!/bin/sh\necho 'nsys: no CUDA driver' >&2\nexit 3\n")
    on_gpu = backend.Resolved("gpu", False, "as on a GPU")
    activity, verified, note = device_proof.prove(opened, "geo", on_gpu, 60, None, lambda *a: None)
    assert activity is None and verified is False and "could not be recorded" in note and "no CUDA driver" in note
