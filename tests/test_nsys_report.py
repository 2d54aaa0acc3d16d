"""nsys_report: the nsys command lines, and summaries of recorded `nsys stats --format csv` reports.

Each folder under fixtures/nsys holds one profile's CSVs, named `profile_<report>.csv` as
`nsys stats --output profile` names them: fused (a healthy cuDF run), tiny_kernels (thousands of
tiny launches, nsys's fully quoted layout with thousands separators), host_round_trip (the input
copied back to the host), legacy (2021-era report names and KiB sizes, NVTX report missing) and
no_kernels (a kernel report nsys SKIPPED, memory reports absent).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aether_mcp.parsers.nsys_report import REPORTS, NsysSummary, nsys_rep_path, parse_reports, profile_command, report_paths, stats_command

FIXTURES = Path(__file__).parent / "fixtures" / "nsys"
# (wall_s, data_bytes, result_bytes, rows) each fixture was recorded for
RUNS = {
    "fused": (0.06, 160_000_000, 80_000_000, 10_000_000),
    "tiny_kernels": (0.5, 800_000, 800_000, 100_000),
    "host_round_trip": (0.2, 80_000_000, 40_000_000, 5_000_000),
    "legacy": (0.02, 8_000_000, 4_000_000, 1_000_000),
    "no_kernels": (0.3, 8_000_000, 8_000_000, 1_000_000),
}
FUSED_MUL_KERNEL = (
    "void cudf::binops::compiled::for_each_kernel<int, cudf::binops::compiled::binary_op_device_dispatcher<cudf::binops::compiled::ops::Mul>>"
    "(int, cudf::binops::compiled::binary_op_device_dispatcher<cudf::binops::compiled::ops::Mul>)"
)


def summarise(scenario: str, folder: Path | None = None, **overrides: float) -> NsysSummary:
    wall_s, data_bytes, result_bytes, rows = RUNS[scenario]
    run = {"wall_s": wall_s, "data_bytes": data_bytes, "result_bytes": result_bytes, "rows": rows} | overrides
    return parse_reports(report_paths((folder or FIXTURES / scenario) / "profile"), **run)


def hints_starting(summary: NsysSummary, prefix: str) -> list[str]:
    return [hint for hint in summary.hints if hint.startswith(prefix)]


def copy_scenario(scenario: str, tmp_path: Path) -> Path:
    folder = tmp_path / scenario
    shutil.copytree(FIXTURES / scenario, folder)
    return folder


# --- command lines ---------------------------------------------------------------------------


def test_profile_command_is_an_argv_list_with_the_trace_options_before_the_untouched_command(tmp_path: Path) -> None:
    output = tmp_path / "runs" / "profile"
    benchmark = ["python", "-m", "aether_mcp.confined.micro_bench", str(tmp_path / "request with space.json")]
    command = profile_command(output, benchmark)
    assert command[:2] == ["nsys", "profile"]
    assert command[-len(benchmark):] == benchmark
    assert set(command[2:-len(benchmark)]) == {"--trace=cuda,nvtx,osrt", "--sample=none", "--force-overwrite=true", f"--output={output}"}
    assert all(isinstance(part, str) for part in command)


def test_profile_command_refuses_an_empty_command(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        profile_command(tmp_path / "profile", [])


def test_stats_command_exports_every_report_as_csv_under_the_prefix(tmp_path: Path) -> None:
    report = nsys_rep_path(tmp_path / "profile")
    command = stats_command(report, tmp_path / "stats")
    assert command[:2] == ["nsys", "stats"]
    assert command[-1] == str(report)
    assert set(command[2:-1]) == {f"--report={','.join(REPORTS)}", "--format=csv", f"--output={tmp_path / 'stats'}", "--force-export=true"}


def test_nsys_rep_path_appends_the_extension_the_way_nsys_does() -> None:
    assert nsys_rep_path(Path("/runs/profile")) == Path("/runs/profile.nsys-rep")
    assert nsys_rep_path(Path("/runs/profile.v2")) == Path("/runs/profile.v2.nsys-rep")
    assert nsys_rep_path(Path("/runs/profile.nsys-rep")) == Path("/runs/profile.nsys-rep")


def test_report_paths_are_prefix_underscore_report_csv() -> None:
    paths = report_paths(Path("/runs/stats"))
    assert tuple(paths) == REPORTS
    assert paths["cuda_gpu_kern_sum"] == Path("/runs/stats_cuda_gpu_kern_sum.csv")
    assert {path.parent for path in paths.values()} == {Path("/runs")}


# --- a healthy cuDF run ------------------------------------------------------------------------


def test_kernels_are_sorted_by_time_with_shares_of_the_total_and_quoted_names_intact() -> None:
    summary = summarise("fused")
    assert [kernel.total_ns for kernel in summary.kernels] == [9_600_000, 4_800_000, 1_800_000, 1_200_000, 600_000]
    assert summary.kernels[0].name == FUSED_MUL_KERNEL
    assert summary.kernels[0].share == pytest.approx(9.6 / 18)
    assert sum(kernel.share for kernel in summary.kernels) == pytest.approx(1.0)
    assert (summary.kernels[0].instances, summary.kernels[0].mean_ns) == (6, 1_600_000.0)
    assert summary.kernel_launches == 18
    assert summary.kernel_time_s == pytest.approx(0.018)
    assert summary.gpu_share == pytest.approx(0.018 / 0.06)


def test_kernels_and_calls_come_out_most_time_first_whatever_the_row_order(tmp_path: Path) -> None:
    folder = copy_scenario("fused", tmp_path)
    for report in ("cuda_gpu_kern_sum", "cuda_api_sum"):
        path = folder / f"profile_{report}.csv"
        header, *rows = path.read_text().splitlines()
        path.write_text("\n".join([header, *reversed(rows)]) + "\n")
    shuffled, recorded = summarise("fused", folder), summarise("fused")
    assert [kernel.name for kernel in shuffled.kernels] == [kernel.name for kernel in recorded.kernels]
    assert [call.name for call in shuffled.cuda_api] == [call.name for call in recorded.cuda_api]


def test_transfers_join_time_and_size_by_direction_with_mb_as_a_million_bytes() -> None:
    transfers = summarise("fused").transfers
    assert transfers["host_to_device"].model_dump() == {"bytes": 160_000_000, "time_s": pytest.approx(0.0125), "count": 2}
    assert transfers["device_to_host"].model_dump() == {"bytes": 80_000_000, "time_s": pytest.approx(0.00625), "count": 1}
    assert transfers["device_to_device"].bytes == 16_000_000
    assert (transfers["memset"].bytes, transfers["memset"].count) == (7_500_000, 6)


def test_nvtx_ranges_lose_a_bare_leading_colon_and_merge_across_styles() -> None:
    ranges = summarise("fused").nvtx_ranges
    assert [nvtx.name for nvtx in ranges] == ["aether_candidate", "libcudf:cudf::binary_operation", "cudf_python:DataFrame.from_arrow", "libcudf:cudf::copy_if_else"]
    copy_if_else = ranges[-1]
    assert (copy_if_else.total_ns, copy_if_else.instances, copy_if_else.mean_ns) == (8_000_000, 4, 2_000_000.0)


def test_cuda_api_calls_are_listed_by_host_time() -> None:
    api = summarise("fused").cuda_api
    assert [(call.name, call.calls) for call in api[:3]] == [("cudaMemcpyAsync", 3), ("cudaStreamSynchronize", 4), ("cudaMalloc", 12)]
    assert api[0].total_ns == 27_000_000
    assert [call.total_ns for call in api] == sorted((call.total_ns for call in api), reverse=True)


def test_a_healthy_run_gets_no_hints_and_no_notes() -> None:
    summary = summarise("fused")
    assert summary.hints == []
    assert summary.notes == []


def test_the_summary_serialises_to_plain_json_numbers() -> None:
    dumped = json.loads(summarise("fused").model_dump_json())
    assert isinstance(dumped["kernels"][0]["total_ns"], int)
    assert isinstance(dumped["transfers"]["host_to_device"]["bytes"], int)
    assert NsysSummary.model_validate(dumped) == summarise("fused")


# --- hints -------------------------------------------------------------------------------------


def test_thousands_of_tiny_kernels_get_a_fuse_hint_and_only_the_top_ten_are_listed() -> None:
    summary = summarise("tiny_kernels")
    assert len(hints_starting(summary, "fuse:")) == 1
    assert "24,000 kernel launches" in hints_starting(summary, "fuse:")[0]
    assert len(summary.kernels) == 10
    assert summary.kernel_launches == 24_000  # all twelve kernels, not only those listed
    assert summary.kernel_time_s == pytest.approx(0.0588)
    assert (summary.kernels[0].total_ns, summary.kernels[0].instances, summary.kernels[0].mean_ns) == (6_000_000, 2_000, 3_000.0)
    assert sum(kernel.share for kernel in summary.kernels) == pytest.approx(51.0 / 58.8)
    assert summary.cuda_api[0].calls == 24_000


def test_tiny_kernels_spend_most_wall_time_off_the_gpu() -> None:
    summary = summarise("tiny_kernels")
    assert summary.gpu_share == pytest.approx(0.0588 / 0.5)
    assert len(hints_starting(summary, "Python- or transfer-bound:")) == 1


def test_copying_the_input_back_to_the_host_gets_a_round_trip_hint() -> None:
    summary = summarise("host_round_trip")
    assert summary.transfers["device_to_host"].bytes == 120_000_000
    assert len(hints_starting(summary, "a host round trip:")) == 1
    assert hints_starting(summary, "fuse:") == hints_starting(summary, "Python- or transfer-bound:") == []


def test_copying_back_only_the_result_is_no_round_trip() -> None:
    # fused copies 80 MB back: exactly a result the size of the input is expected, four times a small result is not.
    assert hints_starting(summarise("fused", data_bytes=80_000_000, result_bytes=80_000_000), "a host round trip:") == []
    assert len(hints_starting(summarise("fused", data_bytes=160_000_000, result_bytes=8_000_000), "a host round trip:")) == 1


def test_small_copies_back_are_no_round_trip_even_when_larger_than_the_result() -> None:
    # tiny_kernels copies 0.8 MB back, eight times this result but below the size worth a hint.
    assert hints_starting(summarise("tiny_kernels", result_bytes=100_000), "a host round trip:") == []


def test_low_gpu_share_gets_a_host_bound_hint() -> None:
    summary = summarise("fused", wall_s=0.1)
    assert summary.gpu_share == pytest.approx(0.18)
    assert len(hints_starting(summary, "Python- or transfer-bound:")) == 1


def test_no_wall_time_leaves_the_gpu_share_unknown_with_a_note() -> None:
    summary = summarise("fused", wall_s=0.0)
    assert summary.gpu_share is None
    assert any(note.startswith("gpu_share:") for note in summary.notes)
    assert hints_starting(summary, "Python- or transfer-bound:") == []


# --- older nsys, missing and broken reports ---------------------------------------------------


def test_legacy_report_names_columns_and_kib_sizes_are_read() -> None:
    summary = summarise("legacy")
    assert [(kernel.name, kernel.instances, kernel.mean_ns) for kernel in summary.kernels] == [
        ("void kernel_scale<float, int>(float *, int)", 10, 700_000.0),
        ("kernel_offset", 10, 300_000.0),
    ]
    assert summary.transfers["host_to_device"].model_dump() == {"bytes": 8_000_000, "time_s": pytest.approx(0.0009), "count": 1}
    assert summary.transfers["device_to_host"].bytes == 4_000_000
    assert [call.name for call in summary.cuda_api] == ["cudaMemcpy", "cudaLaunchKernel"]
    assert summary.hints == []


def test_legacy_fallbacks_and_a_missing_report_are_noted() -> None:
    summary = summarise("legacy")
    assert summary.nvtx_ranges == []
    assert any(note.startswith("nvtx_sum: missing") for note in summary.notes)
    assert any(note.startswith("cuda_gpu_kern_sum:") and "gpukernsum" in note for note in summary.notes)


def test_paths_may_be_keyed_by_legacy_report_names() -> None:
    folder = FIXTURES / "legacy"
    summary = parse_reports({"gpukernsum": folder / "profile_gpukernsum.csv"}, wall_s=0.02, data_bytes=0, result_bytes=0, rows=0)
    assert summary.kernel_launches == 20


@pytest.mark.parametrize(
    "kernel_report",
    [
        "SKIPPED: /tmp/profile.sqlite does not contain CUDA kernel data.\n",
        "",
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n",
    ],
    ids=["skipped", "empty", "header-only"],
)
def test_a_kernel_report_without_kernels_says_the_gpu_did_no_work(tmp_path: Path, kernel_report: str) -> None:
    folder = copy_scenario("no_kernels", tmp_path)
    (folder / "profile_cuda_gpu_kern_sum.csv").write_text(kernel_report)
    summary = summarise("no_kernels", folder)
    assert (summary.kernels, summary.kernel_launches, summary.kernel_time_s) == ([], 0, 0.0)
    assert len(hints_starting(summary, "the GPU did no work:")) == 1
    assert hints_starting(summary, "fuse:") == hints_starting(summary, "Python- or transfer-bound:") == []


def test_the_recorded_skipped_report_and_missing_memory_reports_are_noted() -> None:
    summary = summarise("no_kernels")
    assert any(note.startswith("cuda_gpu_kern_sum: nsys skipped it") and "does not contain CUDA kernel data" in note for note in summary.notes)
    assert any(note.startswith("cuda_gpu_mem_time_sum: missing") for note in summary.notes)
    assert summary.transfers["host_to_device"].model_dump() == {"bytes": 0, "time_s": 0.0, "count": 0}


@pytest.mark.parametrize(
    "kernel_report",
    ["this is not\na report\n", "Name,Comment\nkernel_a,no timing columns\n"],
    ids=["no-header", "no-time-column"],
)
def test_an_unreadable_kernel_report_is_noted_and_claims_nothing(tmp_path: Path, kernel_report: str) -> None:
    folder = copy_scenario("fused", tmp_path)
    (folder / "profile_cuda_gpu_kern_sum.csv").write_text(kernel_report)
    summary = summarise("fused", folder)
    assert summary.kernels == []
    assert any(note.startswith("cuda_gpu_kern_sum: unreadable") for note in summary.notes)
    assert hints_starting(summary, "the GPU did no work:") == []
    assert summary.transfers["host_to_device"].bytes == 160_000_000  # the other reports still count


def test_no_reports_at_all_gives_notes_and_no_hints(tmp_path: Path) -> None:
    summary = parse_reports(report_paths(tmp_path / "profile"), wall_s=1.0, data_bytes=1_000_000, result_bytes=1_000_000, rows=1_000)
    assert summary.hints == []
    assert [note.split(":")[0] for note in summary.notes[: len(REPORTS)]] == list(REPORTS)
    assert "nothing to judge" in summary.notes[-1]


def test_time_columns_in_other_units_are_converted_to_nanoseconds(tmp_path: Path) -> None:
    (tmp_path / "profile_cuda_gpu_kern_sum.csv").write_text(
        "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name\n"
        "100.0,1500.5,3,500.2,500.0,499,502,1.2,kernel_a\n"
    )
    kernel = parse_reports(report_paths(tmp_path / "profile"), wall_s=1.0, data_bytes=0, result_bytes=0, rows=0).kernels[0]
    assert (kernel.total_ns, kernel.mean_ns) == (1_500_500, pytest.approx(500_200.0))
