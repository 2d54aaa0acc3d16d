"""scan_project over a project laid out as real ones are: shared udfs.py imported by jobs, registered
names used from SQL, notebooks exported as .py, pandas UDFs of each kind, factories, a third-party
library, and types the tools do not take."""

import shutil
from pathlib import Path

import pytest

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import project_scan, workspaces

PROJECT = Path(__file__).parent / "projects" / "retail"
pytestmark = pytest.mark.slow

# (file, line, name, form): every UDF the fixture project defines, written down by hand
EXPECTED = {
    ("retail/udfs.py", 7, "clean_name", "@udf(...)"),
    ("retail/udfs.py", 14, "price_band", "@udf(...)"),
    ("retail/udfs.py", 27, "to_cents", "to_cents = udf(...)"),
    ("retail/udfs.py", 30, "zscore", "@pandas_udf(...)"),
    ("retail/jobs/daily_sales.py", 9, "weekday_num", "@udf(...)"),
    ("retail/jobs/registered.py", 15, "mask_email", "spark.udf.register"),
    ("retail/jobs/registered.py", 16, "is_vip", "is_vip = udf(...)"),
    ("retail/jobs/factories.py", 12, "ten_off", "ten_off = make_discount(...)"),
    ("retail/jobs/streams.py", 8, "fahrenheit", "@pandas_udf(...)"),
    ("retail/jobs/streams.py", 14, "spread", "@pandas_udf(...)"),
    ("retail/notebooks/exploration.py", 11, "is_return", "@udf(...)"),
    ("retail/notebooks/exploration.py", 17, "basket_size", "@udf(...)"),
    ("retail/geo/distance.py", 9, "haversine_km", "@udf(...)"),
    ("retail/geo/distance.py", 19, "grid_cell", "@udf(...)"),
    ("retail/text/normalize.py", 9, "normalize_sku", "@udf(...)"),
    ("retail/text/normalize.py", 16, "tags", "@udf(...)"),
    ("retail/text/normalize.py", 23, "letter_counts", "@udf(...)"),
    ("retail/text/phones.py", 6, "e164", "@udf(...)"),
    ("retail/pricing/tax.py", 9, "sales_tax", "@udf(...)"),
    ("retail/pricing/tax.py", 17, "grace_period", "@udf(...)"),
    ("retail/pricing/loyalty.py", 14, "loyalty_tier", "spark.udf.register"),
}
# why init_workspace cannot take these as they are
NOT_TAKEN = {
    "weekday_num": "types of argument(s) day are unknown",
    "is_vip": "types of argument(s) total are unknown",
    "ten_off": "types of argument(s) price are unknown",
    "fahrenheit": "types of argument(s) celsius are unknown",
    "spread": "types of argument(s) values are unknown",
    "zscore": "types of argument(s) values are unknown",
    "basket_size": "types of argument(s) items are unknown",
    "grace_period": "unknown Spark type 'interval day to second'",
    "e164": "its module does not load where the server runs (ModuleNotFoundError: No module named 'phonenumbers')",
}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    base = tmp_path_factory.mktemp("scan")
    shutil.copytree(PROJECT, base / "retail")
    before = {p: p.read_bytes() for p in base.rglob("*") if p.is_file()}
    root = SandboxRoot(base)
    result = project_scan.scan_project(root, "retail")
    assert {p: p.read_bytes() for p in base.rglob("*") if p.is_file()} == before  # nothing written into the project
    return root, result


def test_every_udf_is_found_with_its_file_line_and_form(scanned):
    _root, result = scanned
    assert {(u.file, u.line, u.name, u.form) for u in result.udfs} == EXPECTED
    assert (result.udfs_found, result.files_with_udfs, result.files_scanned) == (21, 11, 13)
    assert result.by_form == {"udf": 16, "spark.udf.register": 2, "pandas_udf": 3}
    kinds = {u.name: u.pandas_form for u in result.udfs if u.kind == "pandas"}
    assert kinds == {"zscore": "scalar", "fahrenheit": "iterator", "spread": "aggregate"}


def test_types_come_from_hints_or_are_marked_as_guesses_and_reasons_are_init_workspaces(scanned):
    _root, result = scanned
    by_name = {u.name: u for u in result.udfs}
    assert [(a.name, a.type, a.type_from) for a in by_name["haversine_km"].arguments] == [(n, "double", "hint") for n in ("lat1", "lon1", "lat2", "lon2")]
    assert [(a.type, a.type_from) for a in by_name["sales_tax"].arguments] == [("decimal(38,18)", "hint"), ("string", "hint")]
    assert by_name["sales_tax"].return_type == "decimal(10,2)" and by_name["letter_counts"].return_type == "map<string,int>"
    # no hints, but the schema of the data the calling job reads types the column each call passes
    assert [(a.name, a.type, a.type_from) for a in by_name["weekday_num"].arguments] == [("day", "date", "schema")]
    assert [(a.name, a.type, a.type_from) for a in by_name["ten_off"].arguments] == [("price", "double", "schema")]
    assert by_name["weekday_num"].init_call.endswith("udf='weekday_num:9', arg_types={\"day\": \"date\"})")
    assert [(a.name, a.type_from) for a in by_name["basket_size"].arguments] == [("items", "unknown")]
    assert [(a.type, a.type_from) for a in by_name["is_vip"].arguments] == [("int", "guess")]
    assert by_name["is_vip"].init_call == "init_workspace(source='retail/jobs/registered.py', udf='is_vip:16', arg_types={\"total\": \"int\"})"
    assert {u.name for u in result.udfs if not u.convertible} == set(NOT_TAKEN) and result.convertible == 12
    for name, said in NOT_TAKEN.items():
        assert said in by_name[name].reason, (name, by_name[name].reason)
    assert all(u.reason is None for u in result.udfs if u.convertible)
    # what draft_candidate would do, for each UDF init_workspace takes: draft it, or the construct it refuses and where
    assert {u.name for u in result.udfs if u.draft == "drafts a sql candidate (draft_candidate)"} == {"to_cents", "is_return", "loyalty_tier", "price_band", "grid_cell", "normalize_sku"}
    assert result.draftable == 6 and all(u.draft is None for u in result.udfs if not u.convertible)
    assert by_name["sales_tax"].draft == "refused: the return type decimal(10,2) (line 9 of original/udf.py)"
    assert by_name["clean_name"].draft == "refused: the method `.join()` on str (line 7 of original/udf.py)"


def test_call_sites_follow_imports_modules_and_sql_strings(scanned):
    _root, result = scanned
    sites = {u.name: [(c.file, c.line) for c in u.call_sites] for u in result.udfs}
    assert sites["clean_name"] == [("retail/jobs/daily_sales.py", 17), ("retail/jobs/weekly_report.py", 9)]
    assert sites["zscore"] == [("retail/jobs/weekly_report.py", 9)]
    assert sites["to_cents"] == [("retail/jobs/daily_sales.py", 19)]
    assert sites["mask_email"] == [("retail/jobs/registered.py", 17), ("retail/jobs/registered.py", 19)]
    assert sites["loyalty_tier"] == [("retail/pricing/loyalty.py", 15)]
    assert sites["is_vip"] == [("retail/jobs/registered.py", 18)] and sites["haversine_km"] == []
    assert next(u for u in result.udfs if u.name == "mask_email").call_sites[0].code.startswith('spark.sql("SELECT mask_email(email)')


def test_the_payoff_is_measured_and_ranks_the_list(scanned):
    _root, result = scanned
    assert result.spark_udf_us_per_row is not None and result.spark_udf_us_per_row > 0
    timed = [u for u in result.udfs if u.payoff.python_us_per_row is not None]
    assert {u.name for u in timed} >= {u.name for u in result.udfs if u.convertible and u.kind != "pandas"} - {"e164"} | {"weekday_num", "ten_off", "is_vip"}
    for udf in timed:
        assert udf.payoff.python_us_per_row > 0 and udf.payoff.saving_us_per_row == pytest.approx(udf.payoff.python_us_per_row + result.spark_udf_us_per_row, abs=0.01)
        assert udf.payoff.note.startswith("timed on ")
    e164 = next(u for u in result.udfs if u.name == "e164")
    assert e164.payoff.python_us_per_row is None and "phonenumbers" in e164.payoff.note and e164.likely_target == "unclear"
    order = [(not u.convertible, -(u.payoff.saving_us_per_row or -1)) for u in result.udfs]
    assert order == sorted(order)
    assert len(result.summary) == 10 and result.summary[0].startswith(f"1. {result.udfs[0].name} (")
    targets = {u.name: u.likely_target for u in result.udfs}
    assert targets["letter_counts"] == targets["basket_size"] == "vectorized" and targets["price_band"] == targets["normalize_sku"] == "sql"


def test_pages_of_the_ranking_list_everything_once(scanned, monkeypatch):
    root, whole = scanned
    monkeypatch.setattr(project_scan, "PAGE_UDFS", 8)
    seen, offset = [], 0
    while offset is not None:
        page = project_scan.scan_project(root, "retail", offset)  # the same files: served from the scan already made
        assert len(page.udfs) <= 8 and (page.more is None) == (page.next_offset is None)
        seen += [(u.file, u.line) for u in page.udfs]
        offset = page.next_offset
    assert seen == [(u.file, u.line) for u in whole.udfs]
    with pytest.raises(Exception, match="past the end of the scan"):
        project_scan.scan_project(root, "retail", 99)


def test_the_init_call_it_proposes_opens_the_udf(scanned):
    root, result = scanned
    for name in ("clean_name", "loyalty_tier"):
        udf = next(u for u in result.udfs if u.name == name)
        created = workspaces.init_workspace(root, udf.file, f"{udf.name}:{udf.line}")
        assert created.udf.name == name and [a.name for a in created.udf.args] == [a.name for a in udf.arguments]
    e164 = next(u for u in result.udfs if u.name == "e164")
    with pytest.raises(Exception, match="phonenumbers"):  # the scan's reason is what init_workspace says
        workspaces.init_workspace(root, e164.file, "e164:6")


def test_a_path_that_is_not_a_folder_under_the_root_is_refused_saying_what_to_pass(scanned):
    root, _result = scanned
    with pytest.raises(Exception, match="is not a folder under the server root; pass a folder"):
        project_scan.scan_project(root, "retail/udfs.py")
    with pytest.raises(Exception, match="parent-directory steps are not allowed. Give a path inside the server root"):
        project_scan.scan_project(root, "../..")
