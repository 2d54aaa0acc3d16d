"""The GPU backend on a real NVIDIA GPU: skipped, with the reason, where there is none.

scripts/gpu_check.sh runs these on a machine with CuPy (for CUDA 12 or 13), numba-cuda and PySpark
(cuDF optional: without it the columns reach the device as CuPy arrays copied from pandas). They check that the bundled geo
candidates run on the device and agree with the original (CUDA's libdevice trig may differ from
the host's libm in the last bits, so only ULP-level float differences are allowed, never
null/NaN/sign differences), that results say `backend: gpu` and, where device counters can be
read (nsys on the PATH, or PyTorch for CUPTI), that they verified the GPU path; and that a
candidate copying device data back row by row is failed by the device counters.
"""

from __future__ import annotations

import shutil

import pytest
from conftest import EXAMPLES, REPO

from aether_mcp.parsers import device_counters
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import benchmarking, byte_compare, cheat_audit, files, workspaces
from aether_mcp.tools.suite_runs import run_tests

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

GEO_TYPES = {"lat1": "double", "lon1": "double", "lat2": "double", "lon2": "double"}
MAX_ULPS = 8


@pytest.fixture(scope="module")
def geo(tmp_path_factory, workers):
    directory = tmp_path_factory.mktemp("geo-gpu")
    shutil.copytree(EXAMPLES / "delivery_geo", directory / "delivery_geo")
    root = SandboxRoot(directory)
    created = workspaces.init_workspace(root, "delivery_geo/job.py", "haversine_km", arg_types=GEO_TYPES, backend="gpu")
    ws = created.workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "delivery_geo" / "cases.py").read_text())
    for name in ("haversine_vectorized", "haversine_kernel"):
        files.write_file(root, ws, f"candidate/{name}.py", (EXAMPLES / "delivery_geo" / "candidates" / f"{name}.py").read_text())
    files.write_file(root, ws, "candidate/row_copies.py", (REPO / "tests" / "red_team" / "candidates" / "haversine_km" / "cheat_row_copies.py").read_text())
    return root, ws


def _check_device_result(result) -> None:
    assert result.error is None, result.error
    assert (result.backend, result.simulated) == ("gpu", False)
    assert all(m.ulp_distance is not None and m.ulp_distance <= MAX_ULPS for m in result.mismatches), result.mismatches[:3]
    source = device_counters.choose_source()
    if source.name:
        assert result.gpu_verified and result.device_activity.kernel_launches > 0, result.backend_note
        assert result.device_activity.source == source.name and result.device_activity.device.get("cupy_cuda_major") in (12, 13)
    else:
        assert not result.gpu_verified and source.detail in result.backend_note


@pytest.mark.parametrize("candidate", ["haversine_kernel", "haversine_vectorized"])
def test_the_geo_candidates_run_on_the_device_and_agree_with_the_original(geo, workers, candidate):
    root, ws = geo
    tested = run_tests(root, workers, ws, f"candidate:{candidate}")
    assert tested.backend == "gpu" and not tested.simulated
    _check_device_result(byte_compare.byte_compare(root, workers, ws, candidate, hidden_rows=2000))


def test_micro_benchmark_records_the_allocator_it_timed_under(geo):
    root, ws = geo
    result = benchmarking.micro_benchmark(root, ws, "haversine_kernel", rows=100_000, repeats=3)
    assert result.backend == "gpu" and result.allocator.get("cupy")
    assert result.device["cupy"].startswith(("cupy-cuda12x", "cupy-cuda13x")) and result.device["cuda_runtime"]


def test_row_by_row_copies_back_to_the_host_are_failed_by_the_device_counters(geo, workers):
    source = device_counters.choose_source()
    if source.name is None:
        pytest.skip(f"device counters cannot be read here: {source.detail}")
    root, ws = geo
    audit = cheat_audit.audit_candidate(root, workers, ws, "row_copies", hidden_rows_count=1000)
    assert audit.verdict == "FAIL" and not audit.gpu_verified
    assert any(f.check == "dynamic" and f.rule == "host_round_trip" and "device counters" in f.evidence for f in audit.findings), audit.findings
