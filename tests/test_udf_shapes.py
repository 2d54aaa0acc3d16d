"""UDFs in the shapes real jobs write them: star imports, names a job leaves undefined, local modules, keyword registration.

Each job here and under tests/shapes/ is written for these tests in a shape public PySpark jobs
use. What matters is what init_workspace does with it: extract it so the reference computes what
the job computes, or refuse at once with a reason that says what to do, and never record an
extraction's mistake as the UDF's behaviour. One shape per kind goes the whole first loop:
init_workspace, record_cases, run_tests and byte_compare of a hand-written candidate.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from shapes.catalog import SHAPES, Outcome, apply_step, run_shape

from aether_mcp import extraction
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import files, spec_strength, workspaces
from aether_mcp.tools.benchmarking import micro_benchmark, run_benchmark
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.tools.conversion_report import wiring
from aether_mcp.tools.profiling import nsys_profile
from aether_mcp.workspace import Workspace, derivation

GLOBAL_SET_JOB = '''
from pyspark.sql.functions import udf


def configure():
    global RATE
    RATE = 0.2


configure()


@udf("double")
def taxed(amount: float) -> float:
    return None if amount is None else amount * (1 + RATE)
'''

FACTORY_JOB = '''
"""Distances from a depot, the depot fixed when the UDF is made."""
import math

from pyspark.sql import functions as F
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType

EARTH_RADIUS_KM = 6371.0


def make_distance_udf(lat, lon):
    phi = math.radians(lat)
    return udf(
        lambda a, b: None if a is None or b is None else EARTH_RADIUS_KM * math.hypot(math.radians(a) - phi, math.radians(b - lon)),
        DoubleType(),
    )


def make_label_udf(prefix):
    @udf("string")
    def label(code):
        return None if code is None else f"{prefix}-{code.strip().upper()}"

    return label


def main(spark, stores, region):
    from_depot = make_distance_udf(40.7, -74.0)
    store_label = make_label_udf(prefix="store")
    region_label = make_label_udf(region)
    stores.select(from_depot(F.col("lat"), F.col("lon")), store_label("code"), region_label("code")).show()
'''


SHAPES_DIR = Path(__file__).parent / "shapes"
LOCAL_MODULE_JOB = (SHAPES_DIR / "local_module_constant" / "job.py").read_text()


def _root(tmp_path: Path, **sources: str) -> SandboxRoot:
    for name, text in sources.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return SandboxRoot(tmp_path)


def _extract(tmp_path: Path, source: str, name: str) -> extraction.ExtractedUdf:
    path = tmp_path / "extract_me.py"
    path.write_text(textwrap.dedent(source))
    text, tree = extraction.read_source(path, "extract_me.py")
    return extraction.extract_udf(text, tree, extraction.select_udf(extraction.find_udfs(tree), name, "extract_me.py"), "extract_me.py")


def test_star_imports_travel_with_the_udf_that_needs_them(tmp_path):
    extracted = _extract(tmp_path, (SHAPES_DIR / "star_import" / "job.py").read_text(), "norm")
    assert "from math import *" in extracted.module_source and extracted.undefined_names == []
    namespace: dict = {}
    exec(compile(extracted.module_source, "udf.py", "exec"), namespace)
    assert namespace["norm"](3.0, 4.0) == 5.0


def test_a_local_module_the_udf_imports_is_carried_into_the_reference_and_its_digest_recorded(tmp_path):
    root = _root(tmp_path, **{"job.py": LOCAL_MODULE_JOB, "patterns.py": "import re\n\nSALARY_RE = re.compile(r'[$,]')\nUNUSED = object()\n"})
    created = workspaces.init_workspace(root, "job.py", "strip_salary")
    source = (Path(created.workspace) / "original" / "udf.py").read_text()
    assert "SALARY_RE = re.compile" in source and "from patterns import" not in source and "UNUSED" not in source
    config = Workspace.open(root, created.workspace).config
    assert config.udf.modules == {"patterns.py": hashlib.sha256((tmp_path / "patterns.py").read_bytes()).hexdigest()}
    assert any("patterns.py" in note and "sha256" in note for note in created.notes)
    assert derivation.rederive(root, Path(created.workspace), config).matches
    # the job's module changed after init: the workspace no longer matches what its sources give
    (tmp_path / "patterns.py").write_text("import re\n\nSALARY_RE = re.compile(r'[$,.]')\nUNUSED = object()\n")
    problems = derivation.rederive(root, Path(created.workspace), config).problems
    assert any("[udf]" in p for p in problems) and any("original/udf.py differs" in p for p in problems)


PROJECT = {
    "proj/__init__.py": "",
    "proj/lib/__init__.py": "",
    "proj/lib/geo.py": '''
        import math

        from pyspark.sql.functions import udf

        EARTH_RADIUS_KM = 6371.0
        ROUTES = {}  # unrelated state the UDF never reads


        def _radians(degrees):
            return math.radians(degrees)


        def haversine(lat1, lon1, lat2, lon2):
            if None in (lat1, lon1, lat2, lon2):
                return None
            a = math.sin((_radians(lat2) - _radians(lat1)) / 2) ** 2 + math.cos(_radians(lat1)) * math.cos(_radians(lat2)) * math.sin((_radians(lon2) - _radians(lon1)) / 2) ** 2
            return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))
    ''',
    "proj/lib/patterns.py": "import re\n\nSPACES = re.compile(r'\\s+')\n",
    "proj/lib/text.py": '''
        from .patterns import *


        def squash(text):
            return SPACES.sub(" ", text.strip())
    ''',
    "proj/jobs/__init__.py": "",
    "proj/jobs/settings.py": "SUFFIX = '!'\nBATCH = 500\n",
    "proj/jobs/daily.py": '''
        from pyspark.sql import functions as F
        from pyspark.sql.functions import udf
        from pyspark.sql.types import DoubleType

        from proj.lib.geo import haversine
        from ..lib import text
        from . import settings as cfg

        distance_km = udf(haversine, DoubleType())


        @udf("string")
        def shout(s: str) -> str:
            return None if s is None else text.squash(s).upper() + cfg.SUFFIX


        def main(spark, path):
            spark.read.parquet(path).select(distance_km("a", "b", "c", "d"), shout("name")).show()
    ''',
    "proj/jobs/uses_udfs_module.py": '''
        from proj.jobs.udfs import tidy


        def main(spark, path):
            spark.read.parquet(path).select(tidy("name")).show()
    ''',
    "proj/jobs/udfs.py": '''
        from pyspark.sql.functions import udf

        from ..lib.text import squash


        @udf("string")
        def tidy(s: str) -> str:
            return None if s is None else squash(s).lower()
    ''',
}


def _project(tmp_path: Path, files_: dict[str, str]) -> SandboxRoot:
    for name, text in files_.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return SandboxRoot(tmp_path)


def _run(source: str, function: str, *args):
    namespace: dict = {}
    exec(compile(source, "udf.py", "exec"), namespace)
    return namespace[function](*args)


def test_a_udf_wrapping_a_function_of_the_projects_own_module_is_extracted_from_that_module(tmp_path):
    root = _project(tmp_path, PROJECT)
    derived = derivation.derive(root, "proj/jobs/daily.py", "distance_km", {k: "double" for k in ("lat1", "lon1", "lat2", "lon2")})
    source = derived.module_source
    assert derived.config.udf.function == "haversine" and set(derived.config.udf.modules) == {"proj/lib/geo.py"}
    assert "EARTH_RADIUS_KM = 6371.0" in source and "def _radians" in source and "ROUTES" not in source and "import proj" not in source
    assert _run(source, "haversine", 0.0, 0.0, 0.0, 1.0) == 2 * 6371.0 * math.asin(math.sin(math.radians(1.0) / 2))


def test_names_read_through_relative_star_and_module_imports_are_followed_into_each_module(tmp_path):
    root = _project(tmp_path, PROJECT)
    derived = derivation.derive(root, "proj/jobs/daily.py", "shout")
    source = derived.module_source
    assert set(derived.config.udf.modules) == {"proj/lib/patterns.py", "proj/lib/text.py", "proj/jobs/settings.py"}
    assert "BATCH" not in source and "import *" not in source  # only what the UDF reads
    assert _run(source, "shout", "  a \t b ") == "A B!"


def test_a_udf_the_job_imports_from_its_udfs_module_is_extracted_from_there(tmp_path):
    root = _project(tmp_path, PROJECT)
    derived = derivation.derive(root, "proj/jobs/uses_udfs_module.py", "tidy")
    assert derived.config.udf.source == "proj/jobs/udfs.py" and set(derived.config.udf.modules) == {"proj/lib/text.py", "proj/lib/patterns.py"}
    assert "imports UDF 'tidy' from proj/jobs/udfs.py" in derived.extracted.notes[0]
    assert _run(derived.module_source, "tidy", " A  B ") == "a b"


@pytest.mark.parametrize(
    "job, refusal",
    [
        # two files binding one name the UDF needs: one module cannot hold both
        ("from rates import RATE as TAX\n\nRATE = 0.5\n", r"needs 'RATE' from rates.py \(line 1\) and job.py \(line 4\).*Rename one"),
        # a local module passed around as a value: only names read as module.NAME can be carried
        ("import rates\n\nRATE = getattr(rates, 'RATE')\nTAX = rates\n", r"uses the local module rates \(rates.py\) as a value.*import those names"),
    ],
)
def test_local_modules_the_extraction_cannot_carry_faithfully_are_refused_saying_why(tmp_path, job, refusal):
    udf_text = "from pyspark.sql.functions import udf\n" + job + "\n\n@udf('double')\ndef taxed(x: float) -> float:\n    return x * (1 + TAX) * RATE\n"
    with pytest.raises(ToolError, match=refusal):
        derivation.derive(_project(tmp_path, {"rates.py": "RATE = 0.2\n", "job.py": udf_text}), "job.py", "taxed")


def test_a_local_module_imported_inside_the_udf_is_refused_at_init_saying_where_to_import_it(tmp_path):
    job = LOCAL_MODULE_JOB.replace("from patterns import SALARY_RE\n", "").replace("    return None", "    from patterns import SALARY_RE\n\n    return None")
    root = _root(tmp_path, **{"job.py": job, "patterns.py": "import re\nSALARY_RE = re.compile(r'[$,]')\n"})
    with pytest.raises(ToolError, match=r"imports the local module 'patterns' \(patterns.py beside job.py\) where init_workspace does not follow it.*at module level"):
        workspaces.init_workspace(root, "job.py", "strip_salary")
    assert not (tmp_path / "aether_workspaces" / "strip_salary").exists()


def test_a_library_that_is_not_installed_is_refused_at_init_saying_what_to_install(tmp_path):
    job = LOCAL_MODULE_JOB.replace("from patterns import SALARY_RE", "from salary_patterns_nowhere import SALARY_RE")
    root = _root(tmp_path, **{"job.py": job})
    with pytest.raises(ToolError, match=r"needs the module 'salary_patterns_nowhere', which is not installed.*pip install salary_patterns_nowhere"):
        workspaces.init_workspace(root, "job.py", "strip_salary")


STAR_CONSTANTS_JOB = """
from pyspark.sql.functions import udf
from pyspark.sql.types import StringType

from constants import *


@udf(StringType())
def age_band(age: int) -> str:
    if age is None:
        return UNKNOWN_BAND
    return SENIOR_BAND if age >= SENIOR_AGE else ADULT_BAND
"""


def test_a_star_imported_local_module_that_is_not_beside_the_job_is_named_as_the_projects_with_the_names_needed(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "constants.py").write_text("SENIOR_AGE = 65\nSENIOR_BAND = 'senior'\nADULT_BAND = 'adult'\nUNKNOWN_BAND = '?'\n")
    root = _root(tmp_path, **{"job.py": STAR_CONSTANTS_JOB})
    with pytest.raises(ToolError) as refused:
        workspaces.init_workspace(root, "job.py", "age_band")
    text = str(refused.value)
    assert "reads ADULT_BAND, SENIOR_AGE, SENIOR_BAND, UNKNOWN_BAND from `from constants import *` in job.py" in text
    assert "module of the project" in text and "lib/constants.py exists" in text and "Put constants.py beside job.py" in text
    assert not (tmp_path / "aether_workspaces" / "age_band").exists()


def test_a_name_the_job_defines_but_the_extraction_lost_is_refused_never_recorded(tmp_path):
    # RATE is bound by `global` inside configure(), which the extraction does not carry: every row would raise NameError
    root = _root(tmp_path, **{"job.py": GLOBAL_SET_JOB})
    with pytest.raises(ToolError, match=r"lost RATE, which job.py defines: NameError on \d+ of 200 generated rows.*extraction bug"):
        workspaces.init_workspace(root, "job.py", "taxed")
    assert not (tmp_path / "aether_workspaces" / "taxed").exists()


def test_keyword_registration_is_found_by_its_sql_name(tmp_path):
    extracted = _extract(tmp_path, (SHAPES_DIR / "keyword_register" / "job.py").read_text(), "custom_to_date")
    definition = extracted.definition
    assert (definition.name, definition.function_name, definition.form) == ("custom_to_date", "parse_date", "spark.udf.register")
    assert definition.return_type.simpleString() == "date"
    assert "import datetime" in extracted.module_source and "def parse_date" in extracted.module_source


@pytest.mark.parametrize(
    "udf, arguments, expected",
    [("from_depot", (40.7, -73.0), 6371.0 * math.hypot(math.radians(40.7) - math.radians(40.7), math.radians(-73.0 - -74.0))), ("store_label", (" ab ",), "store-AB")],
)
def test_a_factory_called_with_literals_is_bound_to_them(tmp_path, udf, arguments, expected):
    extracted = _extract(tmp_path, FACTORY_JOB, udf)
    source = extracted.module_source
    calls = {ast.unparse(node.func) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)}
    assert not calls & {"udf", "F.udf", "pandas_udf"} and "@udf" not in source  # plain Python: the wrapper is gone
    assert f"{udf} = make_" in source and "region" not in source  # the job's own call binds the literals; main() stays behind
    namespace: dict = {}
    exec(compile(source, "udf.py", "exec"), namespace)
    assert namespace[udf](*arguments) == expected  # the same operations in the same order: the same bits


def test_a_static_method_factory_is_found_assigned_and_inline_and_a_factory_asked_for_by_name_says_where_it_is_called(tmp_path):
    from aether_mcp.tools.job_conversion import convert_source

    job = (SHAPES_DIR / "static_factory" / "job.py").read_text().replace(
        'scores.select(score_0_100(F.col("raw_score")).alias("score")).show()',
        'scores.select(score_0_100(F.col("raw_score")), CommonUdf.Clamp(-1.0, 1.0)(F.col("delta"))).show()',
    )
    root = _root(tmp_path, **{"job.py": job})
    _, tree = extraction.read_source(tmp_path / "job.py", "job.py")
    found = {d.name: d for d in extraction.find_udfs(tree)}
    assert found["score_0_100"].form == "score_0_100 = CommonUdf.Clamp(...)" and found["score_0_100"].return_type_error is None
    assert found["Clamp"].form == "CommonUdf.Clamp(...)(...)" and "CommonUdf.Clamp" in found["Clamp"].aliases
    inline = workspaces.init_workspace(root, "job.py", "CommonUdf.Clamp", arg_types={"value": "double"})
    assert "Clamp_udf = _CommonUdf_Clamp(-1.0, 1.0)" in (Path(inline.workspace) / "original" / "udf.py").read_text() and inline.notes == []
    with pytest.raises(ToolError, match=r"made by an inline factory call .* Give the factory's result a name in the job"):
        convert_source(job, Workspace.open(root, inline.workspace).config.udf, "vectorized", "clamp_aether")
    # the static method becomes `_CommonUdf_Clamp`, so it shadows no module-level function of the same name that it calls
    helper = job.replace("class CommonUdf:", "def Clamp(value):\n    return value * 2\n\n\nclass CommonUdf:").replace("return min(max(value, low), high)", "return min(max(Clamp(value), low), high)")
    (tmp_path / "helper_job.py").write_text(helper)
    doubled = workspaces.init_workspace(root, "helper_job.py", "score_0_100", arg_types={"value": "double"}, workspace="doubled")
    reference = (Path(doubled.workspace) / "original" / "udf.py").read_text()
    assert "def Clamp(value):\n    return value * 2" in reference and "score_0_100 = _CommonUdf_Clamp(0.0, 100.0)" in reference
    (tmp_path / "fees.py").write_text((SHAPES_DIR / "cross_file_factory" / "fees.py").read_text())
    with pytest.raises(ToolError) as refused:
        workspaces.init_workspace(root, "fees.py", "make_fee")
    assert "'make_fee' in fees.py is a UDF factory" in str(refused.value) and "No call of it was found" in str(refused.value)
    (tmp_path / "pay.py").write_text("from fees import make_fee\n\ncard_fee = make_fee(0.029)\n")
    with pytest.raises(ToolError, match=r"Its calls under the root: pay.py:3: make_fee\(0.029\)"):
        workspaces.init_workspace(root, "fees.py", "make_fee")


def test_literal_arguments_are_read_from_the_calls_in_the_projects_other_files_and_from_defaults(tmp_path):
    root = _root(
        tmp_path,
        **{
            "udfs.py": """
                from pyspark.sql.functions import udf


                @udf("double")
                def scaled(x: float, factor: float, offset: float = 1.0) -> float:
                    return None if x is None else x * factor + offset
                """,
            "job.py": """
                from pyspark.sql import functions as F

                from udfs import scaled


                def main(df):
                    df.select(scaled(F.col("x"), F.lit(2.5)), scaled(F.col("y"), F.lit(4.0))).show()
                """,
            "report.py": """
                from pyspark.sql import functions as F

                from udfs import scaled as scale

                totals = lambda df: df.select(scale(F.col("z"), F.lit(2.5), F.lit(1.0)))
                """,
        },
    )
    created = workspaces.init_workspace(root, "job.py", "scaled")
    args = {a.name: a for a in created.udf.args}
    assert args["x"].values is None
    assert args["factor"].values == [2.5, 4.0] and args["factor"].values_from == "every call of the UDF under the root passes a literal here (job.py:7, report.py:5)"
    assert args["offset"].values == [1.0] and "the parameter's default where a call leaves it out" in args["offset"].values_from
    assert any(note.startswith("drawn only from the literals the job passes: factor = 2.5, 4.0 (job.py:7, report.py:5); offset = 1.0") and "whole_domain=['factor', 'offset']" in note for note in created.notes)
    widened = workspaces.init_workspace(root, "job.py", "scaled", workspace="widened", whole_domain=["factor"])
    assert {a.name: a.values for a in widened.udf.args}["factor"] is None
    # a test's calls and a file inside a workspace (an agent writes there) are not the job's: they narrow nothing
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_scaled.py").write_text("from pyspark.sql import functions as F\nfrom udfs import scaled\nscaled(F.lit(9.0), F.lit(9.0))\n")
    (Path(created.workspace) / "candidate" / "planted.py").write_text("from pyspark.sql import functions as F\nfrom udfs import scaled\nscaled(F.lit(1.0), F.lit(7.0))\n")
    again = workspaces.init_workspace(root, "job.py", "scaled", workspace="again")
    assert {a.name: a.values for a in again.udf.args}["factor"] == [2.5, 4.0]
    # a file that reaches the UDF any other way than a direct call may pass it anything: nothing is narrowed
    (tmp_path / "daily.py").write_text("import udfs\nfrom pyspark.sql import functions as F\n\ndef run(df):\n    return df.select(udfs.scaled(F.col('x'), F.col('f')))\n")
    opened = workspaces.init_workspace(root, "job.py", "scaled", workspace="opened")
    assert {a.name: a.values for a in opened.udf.args} == {"x": None, "factor": None, "offset": None}
    # the statement that makes a UDF of a function reads that function: it is not passed on, and the literal still counts
    wrapped = "from pyspark.sql import functions as F\nfrom pyspark.sql.functions import udf\n\n\ndef fee(amount, rate):\n    return amount * rate\n\n\nfee_udf = udf(fee, 'double')\n\n\ndef main(df):\n    df.select(fee_udf(F.col('a'), F.lit(0.5)))\n"
    (tmp_path / "fees_job.py").write_text(wrapped)
    made = workspaces.init_workspace(root, "fees_job.py", "fee_udf", arg_types={"amount": "double", "rate": "double"})
    assert {a.name: a.values for a in made.udf.args} == {"amount": None, "rate": [0.5]}


def test_a_factory_called_with_anything_but_literals_is_refused_saying_why(tmp_path):
    with pytest.raises(ToolError, match=r"comes from the factory make_label_udf\(\) called with arguments that are not literals \(make_label_udf\(region\)\)"):
        _extract(tmp_path, FACTORY_JOB, "region_label")


def test_an_extracted_module_that_fails_to_load_is_refused_with_the_error(tmp_path):
    job = '''
from pyspark.sql.functions import udf

BASE = load_base_rate()  # defined nowhere: the job's own module fails at import too


@udf("double")
def rated(amount: float) -> float:
    return None if amount is None else amount * BASE
'''
    root = _root(tmp_path, **{"job.py": job})
    with pytest.raises(ToolError, match=r"the module extracted for UDF 'rated' fails to load \(NameError: name 'load_base_rate' is not defined\).*nothing was created"):
        workspaces.init_workspace(root, "job.py", "rated")


def test_an_installed_module_that_fails_to_import_is_refused_naming_the_import(tmp_path):
    job = LOCAL_MODULE_JOB.replace("from patterns import SALARY_RE", "from json import SALARY_RE")
    root = _root(tmp_path, **{"job.py": job})
    with pytest.raises(ToolError, match=r"failed to import 'json' although it is installed.*fix the import in job.py"):
        workspaces.init_workspace(root, "job.py", "strip_salary")


def _notes_say_hints_came_from_python(outcome: Outcome, workers) -> None:
    assert outcome.created.notes == [
        'argument types from Python hints: x (double), y (double). Spark ignores hints; the job\'s column types rule (a float hint on a '
        'bigint column gives the UDF ints). If a column has another type, init_workspace again with arg_types={"x": "double", "y": "double"} corrected.'
    ]


def _null_reaches_unicode_and_raises_as_in_the_job(outcome: Outcome, workers) -> None:
    assert any("defines unicode nowhere" in note for note in outcome.created.notes)
    assert [case.raises is not None and "unicode" in case.raises for case in outcome.recorded.recorded] == [False, False, True]


def _the_modules_digests_are_frozen(outcome: Outcome, workers) -> None:
    assert set(Workspace.open(SandboxRoot(Path(outcome.created.workspace).parents[1]), outcome.created.workspace).config.udf.modules) == {"udfs_module/geo.py"}


def _the_hint_type_and_the_given_type_are_told_apart(outcome: Outcome, workers) -> None:
    assert [(a.name, a.type, a.type_from) for a in outcome.created.udf.args] == [("total", "double", "hint"), ("units", "bigint", "arg_types")]
    assert "total (double)" in outcome.created.notes[0] and "Spark ignores hints" in outcome.created.notes[0]


def _import_guards_are_not_counted_as_lines_no_case_reaches(outcome: Outcome, workers) -> None:
    root = SandboxRoot(Path(outcome.created.workspace).parents[1])
    coverage = spec_strength.coverage_report(root, workers, outcome.created.workspace)
    assert (coverage.line_percent, coverage.branch_percent, coverage.gate.status) == (100.0, 100.0, "pass"), coverage.uncovered
    extracted = (Path(outcome.created.workspace) / "original" / "udf.py").read_text().splitlines()
    guard = next(number for number, line in enumerate(extracted, start=1) if line.startswith("try:"))
    assert f"lines {guard}-{guard + 3}: import guards" in coverage.measured_on  # try, import, except, import


def _the_factory_is_bound_by_the_jobs_call(outcome: Outcome, workers) -> None:
    assert (outcome.created.udf.form, outcome.created.udf.function) == ("from_depot = make_distance_udf(...)", "from_depot")


NAIVE_SPREAD = """
from pyspark.sql import functions as F

TARGET = "sql"


def build(values):
    return F.max(values) - F.min(values)
"""


def _an_aggregation_is_judged_per_group_through_the_whole_loop(outcome: Outcome, workers) -> None:
    ws = outcome.created.workspace
    root = SandboxRoot(Path(ws).parents[1])
    assert [a.type for a in outcome.created.udf.args] == ["array<double>"] and "once per group" in outcome.created.notes[0]
    guide = (Path(ws) / "candidate" / "README.md").read_text()
    assert "**`spread` is an aggregation**" in guide and "{{" not in guide
    assert [(c.expected, c.raises) for c in outcome.recorded.recorded] == [("4.0", None), ("0.0", None), ("0.0", None), ("None", None)]
    # the naive rewrite: Spark orders NaN above every number, pandas skips it
    files.write_file(root, ws, "candidate/naive.py", NAIVE_SPREAD)
    naive = byte_compare(root, workers, ws, "naive", hidden_rows=1100)
    assert naive.equal is False and {m.kind for m in naive.mismatches} & {"NaN", "null vs value"}
    assert spec_strength.coverage_report(root, workers, ws).line_percent == 100.0
    assert spec_strength.mutation_score(root, workers, ws).killed >= 1
    benchmarked = run_benchmark(root, workers, ws, outcome.shape.name, rows=2000, repeats=1, warmup=0, modes=["floor", "original", "candidate"])
    assert not benchmarked.failed and "equals the original's" in benchmarked.output_check and benchmarked.speedup
    plan = nsys_profile(root, workers, ws, outcome.shape.name, rows=500)
    assert plan.backend == "spark-plan" and "HashAggregate" in plan.plans["physical"]  # the aggregate, in Spark


PER_VALUE_SPREAD = """
import math

TARGET = "vectorized"


def evaluate(values):
    kept = []
    for value in values:  # Python work per value: the watch sees it grow with the group
        if value is not None and value is not values.dtype.na_value and not math.isnan(value):
            kept.append(float(value))
    if not kept:
        return None
    spread = max(kept) - min(kept)
    return None if math.isnan(spread) else spread
"""


def _a_vectorized_aggregation_is_watched_per_group_and_wired_as_an_arrow_aggregate(outcome: Outcome, workers) -> None:
    ws = outcome.created.workspace
    root = SandboxRoot(Path(ws).parents[1])
    # an aggregation's watched runs are groups (an aggregation has no job-batch run at any size), so small sizes show
    # the per-group growth the second audit asserts as well as the defaults would
    audited = audit_candidate(root, workers, ws, outcome.shape.name, hidden_rows_count=1100, watched_rows=(200, 800))
    assert audited.verdict.startswith("PASS"), audited.reasons
    assert audited.watched_rows_compared > 0
    files.write_file(root, ws, "candidate/per_value.py", PER_VALUE_SPREAD)
    looping = audit_candidate(root, workers, ws, "per_value", hidden_rows_count=1100, watched_rows=(200, 800))
    assert looping.verdict == "FAIL" and any(f.rule == "row_at_a_time" and f.check == "dynamic" for f in looping.findings), looping.findings
    micro = micro_benchmark(root, ws, outcome.shape.name, rows=500, repeats=1)
    assert micro.rows == 500
    profiled = nsys_profile(root, workers, ws, outcome.shape.name, rows=300)
    assert profiled.backend == "cpu" and any(spot.function == "evaluate" for spot in profiled.hotspots), profiled.hotspots[:5]
    assert "spark_arrow_aggregate(evaluate" in wiring(Workspace.open(root, ws), outcome.shape.name, "vectorized", [], [])


def _timestamps_in_the_logs_format_are_drawn(outcome: Outcome, workers) -> None:
    # the format is mined from the source and the comment's sample: most hidden rows parse, so the
    # comparison rests on hours the original computed, not on nulls and the few strings that happen to parse
    evidence = outcome.compared.evidence
    assert evidence.hidden_rows_original_raised < evidence.hidden_rows_generated // 2, evidence
    assert evidence.hidden_rows_with_a_value >= evidence.hidden_rows_generated // 4, evidence


def _the_factorys_module_is_carried_and_its_digest_frozen(outcome: Outcome, workers) -> None:
    created = outcome.created
    assert created.udf.form == "card_fee = make_fee(...)"
    source = (Path(created.workspace) / "original" / "udf.py").read_text()
    assert "FIXED_FEE = 0.3" in source and "card_fee = make_fee(0.029)" in source and "udf(" not in source.split("# Protected")[1]
    assert any("fees.py" in note for note in created.notes)


CHECKS = {
    "date_parsing": _timestamps_in_the_logs_format_are_drawn,
    "static_factory": None,
    "cross_file_factory": _the_factorys_module_is_carried_and_its_digest_frozen,
    "star_import": _notes_say_hints_came_from_python,
    "python2_names": _null_reaches_unicode_and_raises_as_in_the_job,
    "udfs_module": _the_modules_digests_are_frozen,
    "package_layout": None,
    "udf_in_udfs_module": None,
    "local_module_constant": None,
    "module_attribute": None,
    "keyword_register": None,
    "factory": _the_factory_is_bound_by_the_jobs_call,
    "import_guard": _import_guards_are_not_counted_as_lines_no_case_reaches,
    "hint_mismatch": _the_hint_type_and_the_given_type_are_told_apart,
    "pandas_iterator": None,
    "pandas_iterator_tuple": None,
    "pandas_aggregate": _an_aggregation_is_judged_per_group_through_the_whole_loop,
    "pandas_aggregate_vectorized": _a_vectorized_aggregation_is_watched_per_group_and_wired_as_an_arrow_aggregate,
    "apply_in_pandas": None,
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", [s for s in SHAPES if s.name in CHECKS], ids=lambda shape: shape.name)
def test_each_kind_of_shape_goes_through_the_first_loop_or_is_refused_up_front(tmp_path, workers, shape):
    outcome = run_shape(shape, tmp_path, workers, hidden_rows=1100)
    if shape.refused:
        assert outcome.refusal and re.search(shape.refused, outcome.refusal), outcome.refusal
        assert not (tmp_path / "aether_workspaces").exists() or not any((tmp_path / "aether_workspaces").iterdir())
        return
    assert outcome.refusal is None
    assert [c.raises for c in outcome.recorded.recorded].count(None) >= 2  # behaviour recorded, not an extraction's NameError
    tested = outcome.tested
    assert (tested.passed, tested.failed, tested.errors) == (len(shape.inputs), 0, 0), tested.tests
    assert outcome.compared.equal, outcome.compared.mismatches[:3]
    assert outcome.compared_rows >= 1000
    if CHECKS[shape.name] is not None:
        CHECKS[shape.name](outcome, workers)


@pytest.mark.parametrize("shape", [s for s in SHAPES if not s.refused], ids=lambda shape: shape.name)
def test_apply_rewrites_every_udf_form_so_that_each_name_the_job_calls_it_by_is_still_bound(tmp_path, shape):
    shutil.copytree(shape.path, tmp_path / shape.name, ignore=shutil.ignore_patterns("candidate*.py", "__pycache__"))
    created = workspaces.init_workspace(SandboxRoot(tmp_path), f"{shape.name}/{shape.source}", shape.udf, arg_types=shape.arg_types, backend="cpu")
    applied = apply_step(shape, tmp_path, created.workspace)
    # the one refusal: a sql candidate for a UDF that SQL text calls by its registered name
    assert applied.startswith("ok: ") or (applied.startswith("refused: ") and "registered for SQL text" in applied), applied


def test_a_udf_registered_and_kept_under_a_python_name_is_found_by_either_and_applied_with_both_bound(tmp_path):
    from aether_mcp.tools.job_conversion import convert_source

    job = """
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType


        def tidy(name):
            return None if name is None else " ".join(name.split()).title()


        def main():
            spark = SparkSession.builder.getOrCreate()
            tidy_udf = spark.udf.register("tidy_name", tidy, StringType())
            spark.read.parquet("s3://crm/people/").select(tidy_udf(F.col("first")), tidy_udf(F.col("last"))).show()
            spark.sql("SELECT tidy_name(city) FROM people").show()
        """
    root = _root(tmp_path, **{"job.py": job})
    created = workspaces.init_workspace(root, "job.py", "tidy_udf", arg_types={"name": "string"})
    udf = Workspace.open(root, created.workspace).config.udf
    assert (udf.name, udf.function) == ("tidy_name", "tidy")
    converted, replaced, _ = convert_source((tmp_path / "job.py").read_text(), udf, "vectorized", "tidy_name_aether")
    assert replaced == (12, 12)
    assert "    tidy_name = spark_arrow_udf(_tidy_name_evaluate, \"string\")\n    tidy_udf = spark.udf.register('tidy_name', tidy_name)\n" in converted
