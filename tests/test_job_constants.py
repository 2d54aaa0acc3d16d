"""A candidate imports the literal constants of the job's own modules: inlined on the import's line, or refused saying why."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import workspaces
from aether_mcp.workspace import Workspace
from aether_mcp.workspace.job_constants import inline

JOB = """\
from pyspark.sql.functions import udf

from patterns import CODES, SALARY_RE


@udf("string")
def strip_salary(text: str) -> str:
    return None if text is None else CODES.get(text, SALARY_RE.sub("", text))
"""
PATTERNS = """\
import functools
import math
import re

SALARY_RE = re.compile(r"[$,]", re.I | re.M)
CODES = {"n/a": "-", "none": "0"}
LIMITS: tuple = (1, 2.5, -3e400)
MOVED = [1, 2]
MOVED.append(3)
COMPUTED = len(CODES)


SCALE = 1000.0


def to_km(metres):
    return _tenths(metres / SCALE)


def _tenths(x):
    return math.floor(x * 10) / 10


@functools.lru_cache
def cached(x):
    return x


def counted(x):
    global HITS
    return x
"""


def _workspace(tmp_path: Path, patterns: str = PATTERNS) -> Workspace:
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / "patterns.py").write_text(patterns)
    (tmp_path / "other.py").write_text("RATE = 2\n")
    root = SandboxRoot(tmp_path)
    return Workspace.open(root, workspaces.init_workspace(root, "job.py", "strip_salary").workspace)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return _workspace(tmp_path)


CANDIDATE = '''\
TARGET = "vectorized"
from patterns import (
    SALARY_RE,
    CODES as TABLE,
)
from patterns import LIMITS; import math


def evaluate(text):
    return text.map(lambda s: TABLE.get(s, SALARY_RE.sub("", s)) if s is not None else None)
'''


def test_constants_are_inlined_on_the_import_lines_with_the_values_the_module_spells(workspace):
    expanded = inline(workspace, CANDIDATE, "candidate/c.py")
    assert len(expanded.splitlines()) == len(CANDIDATE.splitlines())
    assert expanded.splitlines()[1].startswith("import re as ") and "SALARY_RE = " in expanded.splitlines()[1]
    assert expanded.splitlines()[5].endswith("; import math") and expanded.splitlines()[9] == CANDIDATE.splitlines()[9]
    namespace: dict = {}
    exec(compile(expanded, "c.py", "exec"), namespace)
    assert namespace["TABLE"] == {"n/a": "-", "none": "0"} and namespace["LIMITS"] == (1, 2.5, float("-inf"))
    assert namespace["SALARY_RE"].pattern == "[$,]" and namespace["SALARY_RE"].flags & re.I and namespace["SALARY_RE"].flags & re.M
    assert "patterns" not in expanded
    # nothing to inline: the text comes back as it was
    plain = 'TARGET = "sql"\nimport math\nfrom pyspark.sql import functions as F\n'
    assert inline(workspace, plain, "candidate/p.py") is plain


@pytest.mark.parametrize(
    ("line", "refusal"),
    [
        ("import patterns", r"line 2 imports the job's module patterns \(patterns.py\) whole.*from patterns import NAME"),
        ("from patterns import *", r"whole; a candidate may take only its literal constants"),
        ("def f():\n    from patterns import CODES", r"inside a block; import its constants at the candidate's top level"),
        ("from other import RATE", r"other.py, a module of the job that the original does not use.*\(patterns.py\)"),
        ("from patterns import COMPUTED", r"COMPUTED in patterns.py \(line 10\) is not a literal"),
        ("from patterns import MOVED", r"uses MOVED at line 9 in a way that could change it"),
        ("from patterns import LIMITS as TARGET", r"binds TARGET from the job module"),
        ("from patterns import LIMITS as L, CODES as L", r"binds L twice"),
        ("from patterns import LIMITS\nLIMITS = ()", r"imports LIMITS, which the candidate binds again at line 3"),
        ("from patterns import math", r"does not bind math at its top level by an assignment"),
        ("from patterns import cached", r"cached in patterns.py \(line \d+\) is decorated"),
        ("from patterns import counted", r"counted in patterns.py declares HITS global"),
        ("from patterns import to_km as km", r"renames the function to_km of patterns.py"),
        ("from patterns import to_km\nFIRST = to_km(5)", r"line 3 uses to_km while the candidate's module is still running.*inside build or evaluate"),
        ("from patterns import to_km\nSCALE = 1", r"line 3 binds SCALE, which the job's functions it imports read; give it another name"),
    ],
)
def test_what_cannot_be_inlined_is_refused_saying_what_to_do(workspace, line, refusal):
    with pytest.raises(ToolError, match=refusal):
        inline(workspace, f'TARGET = "sql"\n{line}\n', "candidate/c.py")


def test_a_function_comes_with_what_it_reads_from_its_module_after_the_candidates_code(workspace):
    source = 'TARGET = "vectorized"\nimport math\nfrom patterns import to_km, LIMITS\n\n\ndef evaluate(metres):\n    return metres.map(to_km)\n'
    expanded = inline(workspace, source, "candidate/c.py")
    lines = expanded.splitlines()
    assert lines[:2] == source.splitlines()[:2] and lines[2] == "import math; SCALE = 1000.0; LIMITS = (1, 2.5, -1e309)", lines[2]
    assert lines[3:7] == source.splitlines()[3:7]  # the candidate's own lines stay where they were
    assert "# to_km: from patterns.py line" in expanded and "# _tenths: from patterns.py line" in expanded and "functools" not in expanded
    namespace: dict = {}
    exec(compile(expanded, "c.py", "exec"), namespace)
    assert namespace["to_km"](12345.0) == 12.3 and namespace["LIMITS"][0] == 1


def test_a_module_changed_since_init_is_refused(workspace):
    (workspace.root.path / "patterns.py").write_text(PATTERNS.replace('"0"', '"zero"'))
    with pytest.raises(ToolError, match=r"patterns.py changed since init_workspace.*run init_workspace again"):
        inline(workspace, textwrap.dedent('TARGET = "sql"\nfrom patterns import CODES\n'), "candidate/c.py")


@pytest.mark.parametrize(
    ("module", "refusal"),
    [
        ("S = {'a', 'b'}\nS.difference_update({'b'})\n", r"uses S at line \d+ in a way that could change it"),
        ("S = {'k': 1}\n\n\ndef add(d):\n    d['x'] = 2\n\n\nadd(S)\n", r"uses S at line \d+ in a way that could change it"),
        ("S = {'a': 1}\nB = S\nB['b'] = 2\n", r"uses S at line \d+ in a way that could change it"),
        ("S = 5\nmatch 7:\n    case S:\n        pass\n", r"binds or changes S again at line \d+"),
        ("S = 1\ntry:\n    pass\nexcept ValueError as S:\n    pass\n", r"binds or changes S again"),
        ("S = 1\nglobals()['S'] = 2\n", r"reaches names by a string or through its namespace at line \d+"),
        ("S = 0x" + "f" * 4000 + "\n", r"S in patterns.py cannot be written back as text"),
    ],
    ids=["set_method", "passed_to_a_function", "aliased", "match_capture", "except_as", "globals", "too_long_to_write"],
)
def test_a_module_value_known_only_by_running_the_module_is_refused(tmp_path, module, refusal):
    workspace = _workspace(tmp_path, PATTERNS + module)
    with pytest.raises(ToolError, match=refusal):
        inline(workspace, 'TARGET = "sql"\nfrom patterns import S\n', "candidate/c.py")


def test_lines_are_counted_as_python_counts_them(workspace):
    # a form feed or a line separator inside a comment ends no line for Python's parser
    source = 'TARGET = "sql"\n\x0c\nx = 1  # \u2028 note\nfrom patterns import LIMITS\ny = LIMITS\n'
    expanded = inline(workspace, source, "candidate/c.py")
    assert expanded.split("\n")[3] == "LIMITS = (1, 2.5, -1e309)" and "patterns" not in expanded
    namespace: dict = {}
    exec(compile(expanded, "c.py", "exec"), namespace)
    assert namespace["y"] == (1, 2.5, float("-inf"))


@pytest.mark.parametrize(
    ("module", "line", "refusal"),
    [
        ("from math import *\n\n\ndef f(x):\n    return pow(x, 2)\n", "from patterns import f", r"star-imports math at line \d+, which may bind any name its functions read"),
        ("from math import floor\nfrom numpy import floor\n\n\ndef f(x):\n    return floor(x)\n", "from patterns import f", r"f of patterns.py reads floor, which its module imports from a library off the allow-list or binds more than once"),
        ("def f(x):\n    return __name__\n", "from patterns import f", r"f of patterns.py reads __name__, which is not the same name in the candidate"),
        ("def f(x, k=1):\n    return x * k\n\n\nf.__defaults__ = (2,)\n", "from patterns import f", r"sets an attribute of f at line \d+"),
        ("def f(x):\n    return round(x, 1)\n", "from patterns import f\nround = len", r"line 3 binds round, which the job's functions it imports read"),
        ("def f(x, k=SCALE):\n    return x / k\n", "from patterns import f\nSCALE = 1", r"line 3 binds SCALE, which the job's functions it imports read"),
    ],
    ids=["star_import", "bound_twice", "module_name", "changed_from_outside", "builtin_rebound", "default_from_the_module"],
)
def test_a_function_known_only_by_running_its_module_is_refused(tmp_path, module, line, refusal):
    workspace = _workspace(tmp_path, PATTERNS + module)
    with pytest.raises(ToolError, match=refusal):
        inline(workspace, f'TARGET = "sql"\n{line}\n', "candidate/c.py")


def test_functions_of_two_modules_that_read_one_name_each_as_its_own_are_refused(tmp_path):
    job = JOB.replace("from patterns import CODES, SALARY_RE", "from patterns import CODES, SALARY_RE\nfrom units import SUFFIX").replace('SALARY_RE.sub("", text))', 'SALARY_RE.sub("", text)) + SUFFIX')
    (tmp_path / "units.py").write_text('SUFFIX = ""\nSCALE = 1609.0\n\n\ndef to_mi(metres):\n    return metres / SCALE\n')
    workspace = _workspace(tmp_path, PATTERNS)
    (tmp_path / "job.py").write_text(job)
    root = workspace.root
    workspace = Workspace.open(root, workspaces.init_workspace(root, "job.py", "strip_salary", workspace="second").workspace)
    assert set(workspace.config.udf.modules) == {"patterns.py", "units.py"}
    with pytest.raises(ToolError, match=r"to_mi of units.py reads SCALE, which a function of patterns.py the candidate also imports reads as its own"):
        inline(workspace, 'TARGET = "sql"\nfrom patterns import to_km\nfrom units import to_mi\n', "candidate/c.py")


def test_functions_come_in_their_modules_order_and_a_library_named_by_a_project_file_is_refused(tmp_path):
    module = "def g(x):\n    return x\n\n\ndef h(x, clean=g):\n    return clean(x)\n\n\ndef m(xs):\n    return statistics.mean(xs)\n"
    workspace = _workspace(tmp_path, "import statistics\n" + PATTERNS + module)
    expanded = inline(workspace, 'TARGET = "sql"\nfrom patterns import h, g\n', "candidate/c.py")
    namespace: dict = {}
    exec(compile(expanded, "c.py", "exec"), namespace)  # g is defined before h reads it as a default
    assert namespace["h"](3) == 3
    (tmp_path / "statistics.py").write_text("def mean(xs):\n    return 4\n")
    with pytest.raises(ToolError, match=r"m of patterns.py reads statistics, which its module imports from a module of the project named like a library"):
        inline(workspace, 'TARGET = "sql"\nfrom patterns import m\n', "candidate/c.py")
