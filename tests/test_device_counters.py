"""Device counters without nsys: the source chosen from what is installed, CUPTI traces judged as nsys reports are, and the GPU check.

GPU images often carry PyTorch (whose profiler reads CUPTI) but no Nsight Systems, so
`gpu_verified` there rests on Kineto's Chrome traces. Those are judged here on
traces in Kineto's layout (tests/fixtures/cupti/README.md); the recorder's own wrapper runs
against a stand-in torch.profiler, since CUPTI cannot exist without a GPU. scripts/gpu_check.py
records real traces on a GPU and keeps them under --out.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from conftest import REPO

from aether_mcp import backend
from aether_mcp.parsers import device_counters
from aether_mcp.parsers.device_counters import PROBE_KERNEL, Source
from aether_mcp.tools import device_proof

CUPTI = Path(__file__).parent / "fixtures" / "cupti"
ROWS = 100_000
RESULT_BYTES = ROWS * 8 + ROWS // 8  # one float64 Arrow array with its validity bitmap


# --- which source: from what this machine has --------------------------------------------------


def _machine(tmp_path: Path, monkeypatch, *, nsys: bool, torch: bool) -> None:
    """PATH holds an `nsys` or not; sys.path holds a torch package (with torch.profiler) or not."""
    bin_dir, site = tmp_path / "bin", tmp_path / "site"
    bin_dir.mkdir()
    if nsys:
        (bin_dir / "nsys").write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    if torch:
        (site / "torch" / "profiler").mkdir(parents=True)
        (site / "torch" / "__init__.py").write_text("")
        (site / "torch" / "profiler" / "__init__.py").write_text("")
        monkeypatch.syspath_prepend(str(site))


@pytest.mark.parametrize(
    "nsys, torch, chosen",
    [(True, True, "nsys"), (True, False, "nsys"), (False, True, "cupti"), (False, False, None)],
)
def test_counters_come_from_nsys_first_then_cupti_and_otherwise_from_nothing_with_the_reason(tmp_path, monkeypatch, nsys, torch, chosen):
    if not torch and device_counters.importlib.util.find_spec("torch") is not None:
        pytest.skip("PyTorch is installed in this environment: a machine without it cannot be shown here")
    _machine(tmp_path, monkeypatch, nsys=nsys, torch=torch)
    source = device_counters.choose_source()
    assert source.name == chosen
    if chosen == "nsys":
        assert str(tmp_path / "bin" / "nsys") in source.detail
    elif chosen == "cupti":
        assert "torch.profiler" in source.detail
    else:
        assert "nsys" in source.detail and "PyTorch" in source.detail and "install either" in source.detail
    assert "torch" not in sys.modules  # looked up, never imported


def test_without_any_source_a_gpu_run_says_why_it_is_not_verified(monkeypatch):
    none = Source(None, "no source of device counters: nsys is not on the PATH and PyTorch is not installed")
    on_gpu = backend.Resolved("gpu", False, "as on a GPU")
    activity, verified, note = device_proof.prove(None, "geo", on_gpu, 60, None, lambda *a: None, source=none)  # type: ignore[arg-type]
    assert (activity, verified) == (None, False) and note == f"gpu_verified: false: device activity could not be recorded: {none.detail}"


# --- CUPTI traces, judged ---------------------------------------------------------------------


def _judged(name: str, rows: int = ROWS, calls: int = 2, result_bytes: int = RESULT_BYTES):
    counters = device_counters.parse_kineto_trace(CUPTI / name)
    return counters, device_counters.problems(counters, rows, calls, result_bytes)


@pytest.mark.parametrize("trace, kernels", [("cupy_vectorized.json", 72), ("numba_kernel.json", 2)])
def test_device_work_with_one_copy_of_the_result_back_is_verified(trace, kernels):
    counters, problems = _judged(trace)
    assert problems == [] and counters.complete and counters.probe_seen
    assert counters.kernel_launches == kernels  # the recorder's probe kernel is not counted
    assert counters.launch_calls == kernels  # every launch the host made reached the record
    assert counters.transfer("host_to_device").bytes == 2 * 4 * ROWS * 8  # four columns, per call
    assert (counters.transfer("device_to_host").count, counters.transfer("device_to_host").bytes) == (4, 2 * (ROWS * 8 + ROWS))
    # the header is read into the results as written (these fixtures are constructed, "aether_fixture" says so: this
    # proves the parsing, not that anything ran on that device)
    assert counters.meta["devices"] == ["NVIDIA H200"] and counters.meta["cuda_runtime_version"] == 13000


def test_a_result_read_back_one_row_at_a_time_is_a_host_round_trip():
    counters, problems = _judged("row_copies.json.gz", rows=2_000, result_bytes=2_000 * 8 + 250)
    assert counters.complete and counters.transfer("device_to_host").count == 2 * (2_000 + 2)
    assert [rule for rule, _ in problems] == ["host_round_trip"] and "one row at a time" in problems[0][1]


def test_a_candidate_that_computed_on_the_host_is_no_device_work_because_the_probe_shows_the_recorder_saw_the_device():
    counters, problems = _judged("host_only.json")
    assert counters.complete and counters.probe_seen and counters.kernel_launches == 0
    assert [rule for rule, _ in problems] == ["no_device_work"]


@pytest.mark.parametrize(
    "trace, said",
    [
        ("lost_records.json", "recorded none of those kernels"),  # launch calls on the host, no kernel on the device
        ("no_probe.json", PROBE_KERNEL),  # copies, but the recorder never saw its own kernel
    ],
)
def test_a_record_that_cannot_have_seen_the_device_proves_nothing_either_way(trace, said):
    counters, problems = _judged(trace)
    assert not counters.complete and problems == []
    assert any(said in note for note in counters.notes), counters.notes


def test_an_incomplete_record_leaves_gpu_verified_false_and_names_why(tmp_path, monkeypatch):
    recorded = device_proof.DeviceActivity(
        source="cupti", rows=ROWS, calls=2, kernel_launches=0, host_to_device_bytes=0, device_to_host_bytes=0, device_to_host_copies=0,
        result_bytes=RESULT_BYTES, complete=False, notes=device_counters.parse_kineto_trace(CUPTI / "no_probe.json").notes, problems=[],
    )
    monkeypatch.setattr(device_proof, "record", lambda *args, **kwargs: recorded)
    opened = types.SimpleNamespace(state_dir=tmp_path)
    activity, verified, note = device_proof.prove(opened, "geo", backend.Resolved("gpu", False, ""), 60, None, lambda *a: None, source=Source("cupti", "CUPTI"))  # type: ignore[arg-type]
    assert activity is recorded and verified is False
    assert note.startswith("gpu_verified: false: the cupti record cannot prove anything") and PROBE_KERNEL in note
    assert json.loads((next(tmp_path.glob("device/*")) / "activity.json").read_text())["complete"] is False


def test_copies_are_sorted_by_direction_whatever_the_memory_kinds():
    counters = device_counters.parse_kineto_trace(CUPTI / "copy_kinds.json")
    by_direction = {key: (value.count, value.bytes) for key, value in counters.transfers.items()}
    # pinned host memory is host memory, CUDA arrays and peers are device memory, host to host is neither direction
    assert by_direction == {
        "host_to_device": (1, 4096),
        "device_to_host": (2, 2048 + 256),
        "device_to_device": (2, 1024 + 512),
        "other": (1, 128),
        "memset": (1, 128),  # the probe's zeroed input
    }


@pytest.mark.parametrize(
    "content, said",
    [
        (None, "could not be read"),
        (b"{not json", "could not be read"),
        (json.dumps({"schemaVersion": 1}).encode(), "no traceEvents"),
        (gzip.compress(b'{"traceEvents": [', mtime=0)[:-6], "could not be read"),
    ],
)
def test_an_unreadable_trace_never_raises_and_is_never_evidence(tmp_path, content, said):
    path = tmp_path / ("trace.json.gz" if content and content[:2] == b"\x1f\x8b" else "trace.json")
    if content is not None:
        path.write_bytes(content)
    counters = device_counters.parse_kineto_trace(path)
    assert not counters.complete and device_counters.problems(counters, ROWS, 2, RESULT_BYTES) == []
    assert said in counters.notes[0]


def test_nsys_and_cupti_records_of_the_same_run_get_the_same_verdicts():
    from test_backends import _summary

    assert device_counters.problems(_summary("fused"), 10_000_000, 1, 80_000_000) == _judged("numba_kernel.json")[1] == []
    nsys_rules = [rule for rule, _ in device_counters.problems(_summary("no_kernels"), 1_000_000, 1, 8_000_000)]
    assert nsys_rules == [rule for rule, _ in _judged("host_only.json")[1]] == ["no_device_work"]


# --- the recorder, against a stand-in torch.profiler -----------------------------------------


def _stand_in_torch(monkeypatch, recorded: Path, cuda: bool = True) -> list[str]:
    """torch and torch.profiler as a GPU machine has them: profiling CUDA, exporting `recorded` as the trace."""
    calls: list[str] = []
    torch = types.ModuleType("torch")
    torch.__version__ = "2.11.0+cu130"
    profiler = types.ModuleType("torch.profiler")

    class ProfilerActivity:
        CPU, CUDA = "CPU", "CUDA"

    class profile:  # noqa: N801 - torch's name
        def __init__(self, activities):
            calls.append(f"profile({','.join(activities)})")

        def __enter__(self):
            calls.append("start")
            return self

        def __exit__(self, *exc):
            calls.append("stop")
            return False

        def export_chrome_trace(self, path):
            calls.append("export")
            Path(path).write_bytes(recorded.read_bytes())

    profiler.ProfilerActivity, profiler.profile = ProfilerActivity, profile
    profiler.supported_activities = lambda: {ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])}
    torch.profiler = profiler
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.profiler", profiler)
    return calls


def test_the_recorder_probes_the_device_first_inside_the_recording_and_exports_where_the_server_reads(tmp_path, monkeypatch):
    calls = _stand_in_torch(monkeypatch, CUPTI / "numba_kernel.json")
    trace = tmp_path / device_proof.CUPTI_TRACE
    with device_counters.cupti_recording(trace, probe=lambda: calls.append("probe")) as recorder:
        calls.append("candidate")
    assert calls == ["profile(CUDA)", "start", "probe", "candidate", "stop", "export"]
    assert recorder["recorder"] == "CUPTI through torch.profiler (torch 2.11.0+cu130, Kineto)" and recorder["trace"] == str(trace)
    assert device_counters.parse_kineto_trace(trace).kernel_launches == 2
    # the digest the server checks the copied trace against, taken right after the export
    assert recorder["trace_sha256"] == __import__("hashlib").sha256(trace.read_bytes()).hexdigest()


def test_a_trace_rewritten_after_the_recorder_exported_it_proves_nothing(tmp_path, monkeypatch):
    # the recorder as the device check runs it, on a GPU machine's torch; what it exported is taken as it is
    _stand_in_torch(monkeypatch, CUPTI / "host_only.json")
    with device_counters.cupti_recording(tmp_path / device_proof.CUPTI_TRACE, probe=lambda: None) as recorder:
        pass
    result = {**recorder, "result_bytes": 812_500}
    taken = device_proof.cupti_counters(tmp_path, result, "cupti_profile.log")
    assert taken.probe_seen and taken.kernel_launches == 0
    # then something in the candidate's process (a finalizer at shutdown, a thread) rewrites it to claim device work
    trace = tmp_path / device_proof.CUPTI_TRACE
    forged = json.loads(trace.read_text())
    forged["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "forged_kernel", "pid": 0, "tid": 7, "ts": 2000.0, "dur": 5.0, "args": {"correlation": 99}})
    trace.write_text(json.dumps(forged))
    assert device_counters.parse_kineto_trace(trace).kernel_launches == 1  # read as it now is, it would count
    with pytest.raises(device_proof.ToolError, match="the CUPTI trace changed after the recorder exported it"):
        device_proof.cupti_counters(tmp_path, result, "cupti_profile.log")
    trace.unlink()
    with pytest.raises(device_proof.ToolError, match="the CUPTI recording wrote no trace under"):
        device_proof.cupti_counters(tmp_path, result, "cupti_profile.log")


def test_a_torch_that_cannot_profile_cuda_is_refused_before_the_candidate_runs(tmp_path, monkeypatch):
    calls = _stand_in_torch(monkeypatch, CUPTI / "numba_kernel.json", cuda=False)
    with pytest.raises(device_counters.CountersUnavailable, match=r"torch 2\.11\.0\+cu130 cannot profile CUDA here"):
        with device_counters.cupti_recording(tmp_path / "t.json", probe=lambda: calls.append("probe")):
            calls.append("candidate")
    assert calls == [] and not (tmp_path / "t.json").exists()


@pytest.mark.slow
def test_the_real_device_check_child_reports_that_cupti_cannot_record_where_pytorch_is_missing(tmp_path, monkeypatch):
    from test_backends import _geo_with_nsys

    opened = _geo_with_nsys(tmp_path, monkeypatch, "#!/bin/sh\nexit 1\n")  # an nsys on the PATH is not asked for here
    folder = tmp_path / "device"
    folder.mkdir()
    with pytest.raises(device_proof.ToolError, match="CUPTI cannot record here: PyTorch is not importable"):
        device_proof.record(opened, "geo", backend.CPU.env(), folder, 300, None, lambda *a: None, Source("cupti", "CUPTI through torch.profiler"))
    assert list(json.loads((folder / "micro.json").read_text())) == ["counters_unavailable"]  # refused before anything was timed


# --- which CuPy build --------------------------------------------------------------------------


def _distribution(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text("cupy\ncupyx\n")


def test_results_record_which_cuda_build_of_cupy_is_installed(tmp_path, monkeypatch):
    # distributions are looked up on sys.path: only the folder made here is on it, whatever this machine has installed
    (tmp_path / "site").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    assert backend.cupy_package() is None and backend.cuda_major(None) is None
    _distribution(tmp_path / "site", "cupy-cuda13x", "14.2.0")
    assert backend.cupy_package() == "cupy-cuda13x 14.2.0" and backend.cuda_major(backend.cupy_package()) == 13
    _distribution(tmp_path / "site", "cupy-cuda12x", "13.6.0")  # two builds at once break each other: both are named
    assert backend.cupy_package() == "cupy-cuda12x 13.6.0, cupy-cuda13x 14.2.0"


# --- the GPU check ----------------------------------------------------------------------------


def _check(*arguments: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--rows", "20000", "--repeats", "1", *arguments], capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_a_dry_run_gets_as_far_as_the_first_cuda_call_and_lists_everything_else_as_not_run_with_reasons(tmp_path):
    if any(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this machine has a GPU: scripts/gpu_check.sh runs for real here")
    ended = _check("--dry-run", "--out", str(tmp_path))
    assert ended.returncode == 0, ended.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(ended.stdout.split("JSON summary:\n", 1)[1])  # the same summary printed and written
    parts = summary["parts"]
    assert list(parts) == ["environment", "first_cuda_call", "haversine", "backend", "counters", "spark"]
    assert parts["environment"]["status"] == "ran" and parts["environment"]["counter_source"] == "none"
    assert parts["first_cuda_call"]["status"] == "not run" and "first CUDA call" in parts["first_cuda_call"]["reason"]
    for key in ("backend", "counters", "spark"):
        assert parts[key]["status"] == "not run" and parts[key]["reason"], key
    haversine = parts["haversine"]
    assert haversine["status"] == "ran" and haversine["passed"]
    by_label = {variant["label"]: variant for variant in haversine["variants"]}
    assert by_label["NumPy (vectorized candidate, CPU backend)"]["comparison"]["bit_for_bit"]
    gpu = [variant for variant in haversine["variants"] if variant["backend"] == "gpu"]
    assert len(gpu) == 2 and all(variant["seconds"] is None and variant["note"].startswith("not run: ") for variant in gpu)
    report = (tmp_path / "report.md").read_text()
    assert "| first CUDA call | not run |" in report and "| NumPy (vectorized candidate, CPU backend) | cpu |" in report


def test_without_dry_run_a_failing_first_cuda_call_fails_the_check_instead_of_passing_on_nothing():
    if any(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this machine has a GPU: scripts/gpu_check.sh runs for real here")
    ended = _check("--no-spark")
    assert ended.returncode == 1
    summary = json.loads(ended.stdout.split("JSON summary:\n", 1)[1])
    assert summary["passed"] is False and summary["parts"]["first_cuda_call"]["status"] == "failed"
    assert "first CUDA call" in summary["parts"]["first_cuda_call"]["error"]


FORGER = '''

class _Forger:
    """Left alive at module level: its finalizer runs when the device-check process shuts down, after the recorder exported."""

    def __del__(self, open=open):  # bound now: at shutdown the module's builtins may be gone
        trace = {"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "aether_counters_probe", "dur": 1.0},
            {"ph": "X", "cat": "kernel", "name": "forged_kernel", "dur": 5.0},
        ]}
        open("cupti_trace.json", "w").write(str(trace).replace("'", '"'))
        open("micro.json", "w").write('{"result_bytes": 812500, "data_bytes": 3200000, "profiled_s": 0.1, "recorder": "forged"}')


_FORGER = _Forger()
'''


@pytest.mark.slow
def test_a_candidate_cannot_leave_a_forged_record_behind_when_the_device_check_process_ends(tmp_path, monkeypatch):
    from test_backends import _geo_with_nsys

    opened = _geo_with_nsys(tmp_path, monkeypatch, "#!/bin/sh\nexit 1\n")
    candidate = opened.path / "candidate" / "geo.py"
    candidate.write_text(candidate.read_text() + FORGER)
    folder = tmp_path / "device"
    folder.mkdir()
    with pytest.raises(device_proof.ToolError, match="CUPTI cannot record here"):
        device_proof.record(opened, "geo", backend.CPU.env(), folder, 300, None, lambda *a: None, Source("cupti", "CUPTI through torch.profiler"))
    assert not (folder / device_proof.CUPTI_TRACE).exists()
