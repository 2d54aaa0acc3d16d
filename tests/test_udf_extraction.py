"""Finding and extracting UDFs from job sources of many shapes, with exactly what they need."""

import ast
import textwrap
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp import extraction
from aether_mcp.spark_types import type_name


def extract(tmp_path: Path, source: str, name: str) -> extraction.ExtractedUdf:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(source))
    text, tree = extraction.read_source(path, "job.py")
    definition = extraction.select_udf(extraction.find_udfs(tree), name, "job.py")
    return extraction.extract_udf(text, tree, definition, "job.py")


def run_extracted(extracted: extraction.ExtractedUdf, *args):
    namespace: dict = {"__name__": "extracted"}
    exec(compile(extracted.module_source, "udf.py", "exec"), namespace)
    return namespace[extracted.definition.function_name](*args)


def top_level_names(extracted: extraction.ExtractedUdf) -> set[str]:
    names = set()
    for node in ast.parse(extracted.module_source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name for a in node.names}
    return names


def test_decorated_udf_keeps_transitive_helpers_and_drops_unrelated_code(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        import logging
        import math
        from pyspark.sql import SparkSession
        from pyspark.sql.functions import udf
        from pyspark.sql.types import DoubleType, StringType

        logging.basicConfig(level=logging.INFO)
        log = logging.getLogger("job")
        SENIOR_AGE = 65
        UNRELATED = "x"
        TIER_RATES = {"gold": 0.10, "silver": 0.05}

        def _normalise(tier):
            return tier.strip().lower()

        def _rate(tier):
            return TIER_RATES.get(_normalise(tier), 0.0)

        def unrelated_helper():
            return UNRELATED

        @udf(returnType=DoubleType())
        def discount(age: int, amount: float, tier: str) -> float:
            # keep comments
            if amount is None:
                return None
            bonus = 0.05 if age is not None and age >= SENIOR_AGE else 0.0
            return math.floor(amount * (1 - _rate(tier) - bonus) * 100) / 100

        def main():
            spark = SparkSession.builder.getOrCreate()
            log.info("start")
        ''',
        "discount",
    )
    assert top_level_names(extracted) == {"math", "SENIOR_AGE", "TIER_RATES", "_normalise", "_rate", "discount"}
    assert "# keep comments" in extracted.module_source
    assert not any(line.startswith("@") for line in extracted.module_source.splitlines())
    assert extracted.definition.kind == "row"
    assert type_name(extracted.definition.return_type) == "double"
    assert [(a.name, a.hint_type) for a in extracted.arguments] == [("age", "bigint"), ("amount", "double"), ("tier", "string")]
    assert run_extracted(extracted, 70, 100.0, " Gold ") == 85.0


def test_string_return_type_on_aliased_functions_module(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        import pyspark.sql.functions as F

        @F.udf("array<string>")
        def tokens(text: str) -> list:
            return text.split() if text else []
        ''',
        "tokens",
    )
    assert type_name(extracted.definition.return_type) == "array<string>"
    assert extracted.definition.form == "@F.udf(...)"


def test_bare_decorator_defaults_to_string_like_spark(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        from pyspark.sql.functions import udf

        @udf
        def shout(s: str):
            return s.upper()
        ''',
        "shout",
    )
    assert type_name(extracted.definition.return_type) == "string"


def test_assigned_udf_is_found_by_variable_or_function_name(tmp_path):
    source = '''
        from pyspark.sql import functions as F
        from pyspark.sql.types import IntegerType

        def _bucket(score: float) -> int:
            return int(score // 10)

        bucket_udf = F.udf(_bucket, IntegerType())
        '''
    by_variable = extract(tmp_path, source, "bucket_udf")
    by_function = extract(tmp_path, source, "_bucket")
    assert by_variable.module_source == by_function.module_source
    assert by_variable.definition.function_name == "_bucket"
    assert type_name(by_variable.definition.return_type) == "int"
    assert run_extracted(by_variable, 47.5) == 4


def test_lambda_udf_becomes_a_named_function_without_hints(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType

        clean = F.udf(lambda s: s.strip().lower() if s else None, StringType())
        ''',
        "clean",
    )
    assert "def clean(s):" in extracted.module_source
    assert [a.hint_type for a in extracted.arguments] == [None]
    assert run_extracted(extracted, "  MiXed ") == "mixed"


def test_registered_udf_inside_main_is_found_by_its_sql_name(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        import re
        from pyspark.sql import SparkSession

        DIGITS = re.compile(r"\\D+")

        def normalise_phone(raw: str) -> str:
            return DIGITS.sub("", raw) if raw else None

        def main():
            spark = SparkSession.builder.getOrCreate()
            spark.udf.register("phone_norm", normalise_phone, "string")
        ''',
        "phone_norm",
    )
    assert extracted.definition.form == "spark.udf.register"
    assert top_level_names(extracted) == {"re", "DIGITS", "normalise_phone"}
    assert run_extracted(extracted, "+1 (555) 010-9999") == "15550109999"


def test_pandas_udf_is_extracted_as_a_pandas_kind(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        @pandas_udf("double")
        def doubled(x: pd.Series) -> pd.Series:
            return x * 2
        ''',
        "doubled",
    )
    assert extracted.definition.kind == "pandas"
    assert "import pandas as pd" in extracted.module_source
    assert [a.hint_type for a in extracted.arguments] == [None]  # Series hints say nothing about Spark types


def test_udf_nested_in_main_using_module_names_is_extracted(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        from pyspark.sql.functions import udf
        LIMIT = 10

        def main():
            @udf("int")
            def capped(x: int) -> int:
                return min(x, LIMIT)
        ''',
        "capped",
    )
    assert run_extracted(extracted, 50) == 10


def test_udf_using_a_name_local_to_its_enclosing_function_is_refused(tmp_path):
    with pytest.raises(ToolError, match=r"does not define at module level: limit \(the UDF is defined inside main\(\)"):
        extract(
            tmp_path,
            '''
            from pyspark.sql.functions import udf

            def main():
                limit = 10
                @udf("int")
                def capped(x: int) -> int:
                    return min(x, limit)
            ''',
            "capped",
        )


def test_return_type_through_a_module_constant_and_struct_types(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        from pyspark.sql.functions import udf
        from pyspark.sql.types import ArrayType, DoubleType, StructField, StructType

        POINT = StructType([StructField("lat", DoubleType()), StructField("lon", DoubleType())])
        PATH = ArrayType(POINT)

        @udf(PATH)
        def parse_path(text: str):
            return []
        ''',
        "parse_path",
    )
    assert type_name(extracted.definition.return_type) == "array<struct<lat:double,lon:double>>"
    assert "POINT" not in extracted.module_source  # only the decorator used it


def test_classes_filtered_imports_mutations_and_guarded_imports(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        import os.path
        from dataclasses import dataclass, field
        from collections import OrderedDict, defaultdict
        from pyspark.sql.functions import udf

        try:
            import ujson as json
        except ImportError:
            import json

        # Rates by rule name; explained where they are defined.
        RATES = {"a": 1.0}
        RATES["b"] = 2.0
        RATES.update({"c": 3.0})

        @dataclass
        class Rule:
            name: str
            weight: float = 1.0

        RULES = [Rule("a"), Rule("b", 2.0)]

        @udf("string")
        def describe(code: str) -> str:
            total = sum(r.weight * RATES[r.name] for r in RULES)
            return json.dumps({"code": os.path.basename(code), "total": total})
        ''',
        "describe",
    )
    source = extracted.module_source
    assert "from dataclasses import dataclass\n" in source and "field" not in source
    assert "OrderedDict" not in source and "defaultdict" not in source
    assert 'RATES["b"] = 2.0' in source and "RATES.update" in source
    assert "# Rates by rule name; explained where they are defined.\nRATES = " in source
    assert "except ImportError" in source
    assert run_extracted(extracted, "/x/y.csv") == '{"code": "y.csv", "total": 5.0}'


def test_use_arrow_and_semantic_spark_confs_are_recorded(tmp_path):
    extracted = extract(
        tmp_path,
        '''
        from pyspark.sql import SparkSession
        from pyspark.sql.functions import udf

        @udf("double", useArrow=True)
        def half(x: float) -> float:
            return x / 2

        spark = (SparkSession.builder
                 .config("spark.sql.ansi.enabled", False)
                 .config("spark.executor.memory", "8g")
                 .getOrCreate())
        spark.conf.set("spark.sql.session.timeZone", "Europe/Paris")
        ''',
        "half",
    )
    assert extracted.definition.use_arrow is True
    assert extracted.spark_conf == {"spark.sql.ansi.enabled": "false", "spark.sql.session.timeZone": "Europe/Paris"}
    assert "SparkSession" not in extracted.module_source


def test_same_function_defined_as_udf_twice_is_one_udf(tmp_path):
    source = '''
        from pyspark.sql import functions as F

        def _norm(s: str) -> str:
            return s.lower()

        norm = F.udf(_norm, "string")

        def main(spark):
            spark.udf.register("norm", _norm, "string")
        '''
    assert extract(tmp_path, source, "norm").definition.function_name == "_norm"


def test_ambiguous_name_is_refused_and_name_line_selects(tmp_path):
    source = '''
        from pyspark.sql.functions import udf

        def job_a():
            @udf("int")
            def score(x: int) -> int:
                return x + 1

        def job_b():
            @udf("int")
            def score(x: int) -> int:
                return x + 2
        '''
    with pytest.raises(ToolError, match=r"ambiguous.*score at line 5.*score at line 10.*'score:LINE'"):
        extract(tmp_path, source, "score")
    assert run_extracted(extract(tmp_path, source, "score:10"), 1) == 3


def test_unknown_name_lists_the_udfs_that_are_there(tmp_path):
    with pytest.raises(ToolError, match=r"UDF 'nope' not found in job.py. UDFs there: half \(line 4, @udf\(\.\.\.\)\)"):
        extract(tmp_path, 'from pyspark.sql.functions import udf\n\n\n@udf("double")\ndef half(x: float):\n    return x / 2\n', "nope")


def test_file_without_udfs_says_what_forms_are_recognised(tmp_path):
    with pytest.raises(ToolError, match="no Python UDFs found in job.py"):
        extract(tmp_path, "x = 1\n", "anything")


def test_syntax_error_names_the_line(tmp_path):
    with pytest.raises(ToolError, match=r"has a syntax error: line 2"):
        extract(tmp_path, "x = 1\ndef broken(:\n", "broken")


def test_non_python_files_are_refused(tmp_path):
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="is not Python"):
        extraction.read_source(binary, "data.bin")
    latin = tmp_path / "latin.py"
    latin.write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    with pytest.raises(ToolError, match="not UTF-8"):
        extraction.read_source(latin, "latin.py")
    csv = tmp_path / "data.csv"
    csv.write_text("a,b\n1,2 3\n")
    with pytest.raises(ToolError, match="data.csv is not Python"):
        extraction.read_source(csv, "data.csv")


def test_udf_wrapping_a_function_from_a_library_is_refused_saying_where_it_comes_from(tmp_path):
    with pytest.raises(ToolError, match=r"wraps 'score', imported by from mylib import score \(line 2 of job.py\), which is not a module under the server root"):
        extract(tmp_path, "from pyspark.sql.functions import udf\nfrom mylib import score\nscore_udf = udf(score, 'int')\n", "score_udf")


def test_dependency_on_module_level_spark_state_is_refused(tmp_path):
    with pytest.raises(ToolError, match=r"depends on module-level Spark state at line 4"):
        extract(
            tmp_path,
            '''
            from pyspark.sql import SparkSession
            from pyspark.sql.functions import udf
            LOOKUP = SparkSession.builder.getOrCreate().sparkContext.broadcast({"a": 1})

            @udf("int")
            def code(x: str) -> int:
                return LOOKUP.value.get(x)
            ''',
            "code",
        )


@pytest.mark.parametrize(
    "source, message",
    [
        (
            "from pyspark.sql.functions import pandas_udf, PandasUDFType\n@pandas_udf('a int', PandasUDFType.GROUPED_MAP)\ndef g(pdf):\n    return pdf\n",
            "unsupported UDF form at line 2: GROUPED_MAP pandas UDFs take and return whole frames",
        ),
        ("from pyspark.sql.functions import udf\n@udf('int')\ndef total(*xs):\n    return sum(xs)\n", "takes \\*args"),
        ("from pyspark.sql.functions import udf\nclass J:\n    def f(self, x):\n        return x\nj = J()\nf_udf = udf(j.f, 'int')\n", "wraps 'j.f'"),
        ("from pyspark.sql.functions import udf\n@udf(returnType=make_type())\ndef f(x: int):\n    return x\n", "cannot read the return type of UDF 'f'"),
        ("from pyspark.sql.functions import udf\n@udf('intt')\ndef f(x: int):\n    return x\n", "unknown Spark type 'intt'"),
    ],
)
def test_unsupported_forms_are_refused_with_the_reason(tmp_path, source, message):
    name = "g" if "GROUPED" in source else ("total" if "total" in source else ("f_udf" if "f_udf" in source else "f"))
    with pytest.raises(ToolError, match=message):
        extract(tmp_path, source, name)


def test_python_udf_transport_follows_how_pyspark_creates_the_udf(tmp_path):
    source = '''
        from pyspark.sql import SparkSession, functions as F
        from pyspark.sql.functions import udf

        @udf("double")
        def at_import(x: float) -> float:
            return x

        @udf("double", useArrow=True)
        def explicit(x: float) -> float:
            return x

        def plain(x: float) -> float:
            return x

        def main():
            spark = SparkSession.builder.getOrCreate()
            spark.udf.register("registered", plain, "double")

            @udf("double")
            def in_main(x: float) -> float:
                return x
        '''
    transports = {name: extract(tmp_path, source, name).definition.use_arrow for name in ("at_import", "explicit", "registered", "in_main")}
    # Created before any session: pickled. Explicit: as given. register(fn): pickled.
    # Created while a session exists: the session's spark.sql.execution.pythonUDF.arrow.enabled decides.
    assert transports == {"at_import": False, "explicit": True, "registered": False, "in_main": None}
    after_session = '''
        from pyspark.sql import SparkSession
        from pyspark.sql.functions import udf
        spark = SparkSession.builder.getOrCreate()

        @udf("double")
        def late(x: float) -> float:
            return x
        '''
    assert extract(tmp_path, after_session, "late").definition.use_arrow is None


def test_iterator_pandas_udfs_are_taken_with_their_columns_named_by_the_loop(tmp_path):
    single = extract(
        tmp_path,
        "from typing import Iterator\nimport pandas as pd\nfrom pyspark.sql.functions import pandas_udf\n\n\n"
        "@pandas_udf('double')\ndef twice(batches: Iterator[pd.Series]) -> Iterator[pd.Series]:\n    for x in batches:\n        yield x * 2\n",
        "twice",
    )
    assert (single.definition.pandas_form, [a.name for a in single.arguments]) == ("iterator", ["x"])
    assert "from typing import Iterator" in single.module_source  # the hints travel: Spark reads the form from them
    pair = extract(
        tmp_path,
        "from pyspark.sql.functions import pandas_udf, PandasUDFType\n\n\n"
        "@pandas_udf('double', PandasUDFType.SCALAR_ITER)\ndef ratio(it):\n    for a, b in it:\n        yield a / b\n",
        "ratio",
    )
    assert pair.definition.pandas_form == "iterator"
    assert [a.name for a in pair.arguments] == ["a", "b"]  # no hint: the loop unpacks one Series per column


def test_a_function_given_to_apply_in_pandas_is_refused_saying_what_it_is(tmp_path):
    source = "def norm(pdf):\n    return pdf\n\n\ndef main(df):\n    return df.groupBy('k').applyInPandas(norm, schema='k string')\n"
    with pytest.raises(ToolError, match=r"'norm' is a function of whole frames, given to applyInPandas\(\) at line 6"):
        extract(tmp_path, source, "norm")
