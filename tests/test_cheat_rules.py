"""Each static audit rule on the smallest code that shows its pattern, and honest idioms it must leave alone."""

import textwrap

import pytest

from aether_mcp.judge import cheat_rules

HEADER = "import numpy as np\nimport pandas as pd\nfrom pyspark.sql import functions as F\n"


def rules(body: str, kind: str = "vectorized", cases=frozenset(), original=frozenset()) -> set[str]:
    source = HEADER + textwrap.dedent(body)
    entry = "build" if kind == "sql" else "evaluate"
    return {f.rule for f in cheat_rules.check_candidate(source, "candidate/c.py", kind, set(cases), set(original), entry) if f.severity == "block"}


CAUGHT = {
    "reaches_original": [
        "from original.udf import fee\n",
        "import original.udf as reference\n",
        "import importlib\nreference = importlib.import_module('orig' + 'inal.udf')\n",
        "def evaluate(x):\n    exec('y = 1')\n    return x\n",
        "loader = __import__('builtins')\n",
        "import sys\nsys.path.insert(0, '..')\n",
        "import runpy\n",
        "from aether_mcp.harness import compare\n",
    ],
    "row_at_a_time": [
        "def evaluate(x):\n    return x.apply(lambda v: v + 1)\n",
        "def evaluate(x):\n    return x.map(lambda v: v + 1)\n",
        "def evaluate(x):\n    return pd.Series([v + 1 for v in x])\n",
        "def evaluate(a, b):\n    return pd.Series([p * q for p, q in zip(a, b)])\n",
        "def evaluate(x):\n    out = []\n    for i in range(len(x)):\n        out.append(x.iloc[i])\n    return pd.Series(out)\n",
        "def evaluate(x):\n    return pd.Series(np.vectorize(abs)(x))\n",
        "def evaluate(x):\n    return pd.Series([r.x for r in pd.DataFrame({'x': x}).itertuples()])\n",
        "def evaluate(x):\n    frame = pd.DataFrame({'x': x})\n    return pd.Series([r for _, r in frame.iterrows()])\n",
        "def evaluate(x):\n    i = 0\n    while i < len(x):\n        i += 1\n    return x\n",
    ],
    "host_round_trip": [
        "def evaluate(x):\n    return x.to_pandas()\n",
        "def evaluate(x):\n    return pd.Series(x.values_host)\n",
        "import cupy as cp\ndef evaluate(x):\n    return pd.Series(cp.asnumpy(cp.asarray(x)))\n",
        "import cupy as cp\ndef evaluate(x):\n    return pd.Series(cp.asarray(x).get())\n",
        "def evaluate(x, d):\n    for start in (0, 1):\n        d[start:start + 1].copy_to_host()\n    return x\n",
    ],
    "fallback": [
        "def evaluate(x):\n    try:\n        return x + 1\n    except Exception:\n        return x\n",
        "def evaluate(x):\n    try:\n        return x + 1\n    except:\n        return x\n",
        "def evaluate(x):\n    try:\n        return x + 1\n    except (ValueError, BaseException):\n        return x\n",
    ],
    "reads_forbidden": [
        "def evaluate(x):\n    open('notes.txt').read()\n    return x\n",
        "import os\nUNDER_TEST = 'PYTEST_CURRENT_TEST' in os.environ\n",
        "import inspect\n",
        "import gc\n",
        "import sys\ndef evaluate(x):\n    return x if 'pytest' in sys.modules else -x\n",
        "import sys\ndef evaluate(x):\n    sys._getframe(1)\n    return x\n",
        "CASES = 'tests/cases.py'\n",
    ],
    "tampering": [
        "np.minimum = np.fmin\n",
        "def evaluate(x):\n    pd.options.mode.chained_assignment = None\n    return x\n",
        "def evaluate(x):\n    open('/tmp/log', 'a').write('x')\n    return x\n",
        "import shutil\ndef evaluate(x):\n    shutil.rmtree('/tmp/x')\n    return x\n",
        "def evaluate(x):\n    x[x < 0] = 0\n    return x\n",
        "def evaluate(x):\n    x.fillna(0, inplace=True)\n    return x\n",
        "def evaluate(x):\n    x.iloc[0] += 1\n    return x\n",
        "def build(x):\n    F.broadcast(x)\n    return x\n",
        "from pyspark.sql import SparkSession\ndef build(x):\n    SparkSession.getActiveSession().conf.set('spark.sql.ansi.enabled', 'false')\n    return x\n",
        "def evaluate(x):\n    setattr(np, 'abs', abs)\n    return x\n",
    ],
    "escape": [
        "import threading\n",
        "from concurrent.futures import ProcessPoolExecutor\n",
        "import subprocess\n",
        "import ctypes\n",
        "import socket\n",
        "import os\ndef evaluate(x):\n    os.system('true')\n    return x\n",
        "def build(x):\n    return F.expr(\"reflect('java.lang.Math', 'abs', x)\")\n",
        "def build(x):\n    return F.expr(f\"JAVA_METHOD('java.lang.Math', 'abs', {x})\")\n",
        "def build(x):\n    return F.input_file_name()\n",
    ],
    "memoization": [
        "SEEN = {}\ndef evaluate(x):\n    SEEN[len(x)] = x\n    return x\n",
        "SEEN: dict = {}\ndef evaluate(x):\n    SEEN.update({1: x})\n    return x\n",
        "RESULTS = []\ndef evaluate(x):\n    RESULTS.append(x)\n    return x\n",
        "from functools import lru_cache\n@lru_cache(maxsize=None)\ndef helper(v):\n    return v\n",
        "COUNT = 0\ndef evaluate(x):\n    global COUNT\n    COUNT += 1\n    return x\n",
    ],
    # issue 15: the spellings that slipped past the rules before
    "evades_watch": [
        "import sys\ndef evaluate(x):\n    sys.settrace(None)\n    return x\n",
        "import sys\ndef evaluate(x):\n    return x if sys.gettrace() is None else x * 0\n",
        "import types\ndef evaluate(x):\n    code = evaluate.__code__.replace(co_filename='/numpy/core.py')\n    return types.FunctionType(code, {})(x)\n",
    ],
    "unexpected_import": [
        "import os\ndef evaluate(x):\n    return x\n",
        "import sklearn.preprocessing\ndef evaluate(x):\n    return x\n",
        "from pyspark import cloudpickle\ndef evaluate(x):\n    return x\n",
    ],
}
# a closed language (issue: allow, don't forbid): each of these reaches a module or a namespace no import rule names
CAUGHT["outside_language"] = [
    # which module or file it runs in: the judge's are not the job's
    "def evaluate(x):\n    return x.str.upper() if len(__name__) > 24 else x\n",
    "def evaluate(x):\n    return x if 'aether_workspaces' in __file__ else -x\n",
    "class Tag:\n    where = __module__\ndef evaluate(x):\n    return x + Tag.where\n",
    "import uuid\ndef evaluate(x):\n    return x if 'HOME' in uuid.os.environ else -x\n",
    "def evaluate(x):\n    return x if pd.io.common.os.getpid() else -x\n",
    "from json import codecs\n",
    "import dataclasses\ndef evaluate(x):\n    dataclasses._thread.start_new_thread(print, ())\n    return x\n",
    "def evaluate(x):\n    return x.__class__.__init__.__globals__\n",
    "import json\ndef helper(m):\n    return m\ndef evaluate(x):\n    helper(json)\n    return x\n",
    "import functools\ndef evaluate(x):\n    return functools.reduce(getattr, ['os'], x)\n",
    "def evaluate(x):\n    name = x.name\n    return getattr(np, name)(x)\n",
    "import uuid\ndef evaluate(x):\n    return getattr(uuid, 'os')\n",
    # a module bound from a chain, a default, a walrus, a class keyword: each a module used as a value
    "def evaluate(x):\n    common = pd.io.common\n    return common.os\n",
    "import pyarrow as pa\ndef evaluate(x, util=pa.lib):\n    return x\n",
    "def evaluate(x):\n    if (m := np.lib):\n        return x\n",
    "from uuid import *\n",
    "try:\n    import cupy as xp\nexcept ImportError:\n    xp = np\ndef evaluate(x):\n    return xp.f2py.subprocess\n",
    "def evaluate(x):\n    return np.ctypeslib.load_library('libc.so.6', '/lib')\n",
    "def evaluate(x):\n    return pd.read_pickle(x)\n",
    "def evaluate(x):\n    return pd.eval('x + 1', engine='python')\n",
    "def evaluate(x):\n    return x.to_frame().query('x > 1')\n",
    "import typing\ndef probe(a: \"__builtins__\"):\n    return a\n",
    "import operator\ndef evaluate(x):\n    return operator.attrgetter('common.os')(pd.io)\n",
    "import json\ndef evaluate(x):\n    return '{0.__globals__}'.format(json.dumps)\n",
    "def evaluate(x):\n    return (i for i in [0]).gi_frame.f_builtins\n",
    "import json\ndef evaluate(x):\n    match json.dumps:\n        case object(__globals__=g):\n            return g\n",
    "import statistics\ndef evaluate(x):\n    self = statistics.random\n    return self._inst\n",
    # a second round: private names in imports, strings run as code, pickles, by-name calls
    "from random import _os\n",
    "from numpy.lib import _npyio_impl\n",
    "import numba\n@numba.njit(\"int64(__import__('os'))\")\ndef f(x):\n    return x\n",
    "import numba\n@numba.njit\ndef f(v):\n    with numba.objmode(y='print(1) or float64'):\n        y = 2.0\n    return v * y\n",
    "from numba import types\nGETENV = types.ExternalFunction('getenv', types.voidptr(types.voidptr))\n",
    "from pandas.compat import pickle_compat\n",
    "def evaluate(x):\n    return x.to_frame().agg('eval', 0, expr='x + 1')\n",
    "import dataclasses\n@dataclasses.dataclass\nclass Key:\n    __annotations__ = {'a': int}\n",
    "import dataclasses\nRow = dataclasses.make_dataclass('Row', [('v', 'int')])\n",
    "import json\ndef evaluate(x):\n    return ('{0._' + '_globals__}').format(json.dumps)\n",
    "import warnings\ndef evaluate(x):\n    return warnings.formatwarning('m', UserWarning, '/etc/passwd', 1)\n",
    # a stack level attributes a warning to the frames that called the candidate: the judge's, not the job's
    "import warnings\ndef evaluate(x):\n    with warnings.catch_warnings(record=True) as w:\n        warnings.warn('m', stacklevel=3)\n    return x if w[0].filename else -x\n",
    "import warnings\ndef evaluate(x):\n    warnings.warn('m', UserWarning, 2)\n    return x\n",
    "from warnings import warn\ndef evaluate(x):\n    warn('m', skip_file_prefixes=('/',))\n    return x\n",
    "import warnings\ndef evaluate(x):\n    warnings.warn('m', **{'stacklevel': 2})\n    return x\n",
    "import functools, warnings\ndef evaluate(x):\n    functools.partial(warnings.warn, stacklevel=2)('m')\n    return x\n",
    # a recorded warning names the file it came from: the candidate's file where the judge loads it, not the job's
    "import warnings\ndef evaluate(x):\n    with warnings.catch_warnings(record=True) as w:\n        warnings.warn('m')\n    return x if 'candidate' in w[0].filename else -x\n",
    "import functools, warnings\ndef evaluate(x):\n    recording = functools.partial(warnings.catch_warnings, record=True)\n    return x\n",
    # of this project, only the backend's API for candidates: the rest is the judge's code, loaded only where it judges
    "import aether_mcp.backend\ndef evaluate(x):\n    return x if hasattr(aether_mcp, 'confined') else -x\n",
    "import aether_mcp.backend\ndef evaluate(x):\n    return x if aether_mcp.evaluation else -x\n",
    "from aether_mcp.backend import Path\ndef evaluate(x):\n    return x if str(Path.home()).startswith('/tmp') else -x\n",
    "from aether_mcp import backend\ndef evaluate(x):\n    return x if backend.has_gpu() else -x\n",
    "import aether_mcp.backend as b\ndef evaluate(x):\n    return x if getattr(b, 'os') else -x\n",
    # names are not followed through class attributes: no module bound, no import, in a class body
    "import aether_mcp.backend\nclass K:\n    m = aether_mcp.backend\ndef evaluate(x):\n    return x if str(K.m.Path.home()).startswith('/tmp') else -x\n",
    "class K:\n    import warnings as w\ndef evaluate(x):\n    with K.w.catch_warnings(record=True) as r:\n        K.w.warn('m')\n    return x if r else -x\n",
    # a catch_warnings object outside a `with` can be made to record: by its type, or by running __init__ again
    "import warnings\nC = type(warnings.catch_warnings())\ndef evaluate(x):\n    with C(record=True) as w:\n        warnings.warn('m')\n    return x if w else -x\n",
    "import warnings\ndef evaluate(x):\n    c = warnings.catch_warnings()\n    c.__init__(record=True)\n    with c as w:\n        warnings.warn('m')\n    return x if w else -x\n",
    "import pyarrow as pa\ndef evaluate(x):\n    return pa.CompressedInputStream('/etc/passwd.gz', 'gzip').read()\n",
    "import zoneinfo\nzoneinfo.reset_tzpath(to=['/'])\n",
]
# the clock and unseeded randomness, followed to the real function whatever the name it is imported under
CAUGHT["not_deterministic"] = [
    "import time\ndef evaluate(x):\n    return x if time.time() > 0 else -x\n",
    "from time import perf_counter as tick\ndef evaluate(x):\n    return x if tick() else -x\n",
    "import time\ndef evaluate(x):\n    return x if time.strftime('%Y') < '2027' else -x\n",
    "import datetime\ndef evaluate(x):\n    return x if datetime.date.today().year < 2027 else -x\n",
    "def evaluate(x):\n    return x if pd.Timestamp('now').year < 2027 else -x\n",
    "import random\ndef evaluate(x):\n    return x * random.random()\n",
    "def evaluate(x):\n    return x + np.random.rand(len(x))\n",
    "def evaluate(x):\n    return x + np.random.default_rng().random(len(x))\n",
    "import uuid\ndef evaluate(x):\n    return x.astype(str) + str(uuid.uuid4())\n",
    # looked up by name, not called in place, given None or no time, or a string the parser reads as the date
    "import datetime\ndef evaluate(x):\n    return getattr(datetime.datetime, 'now')()\n",
    "import random\nMAKE = random.Random\n",
    "import random\ndef evaluate(x):\n    return random.Random(None).random()\n",
    "import time\ndef evaluate(x):\n    return time.ctime(None)\n",
    "def evaluate(x):\n    return pd.to_datetime(['now'])\n",
    "def evaluate(x):\n    return x.sample(frac=1.0)\n",
    "def evaluate(x):\n    generator = np.random.RandomState(0)\n    generator.seed()\n    return x\n",
    "def evaluate(x):\n    return x + hash('salt')\n",
    "import time\ndef evaluate(x, when=None):\n    return time.ctime(when)\n",
    "SEED = None\ndef evaluate(x):\n    return x + np.random.default_rng(SEED).random(len(x))\n",
    "def evaluate(x):\n    return x if pd.Timestamp('n' + 'ow').year else x\n",
    "import statistics\ndef evaluate(x):\n    return statistics.NormalDist().samples(len(x))\n",
    "def evaluate(x):\n    return x.sample(frac=1.0, random_state=None)\n",
    "def evaluate(x):\n    return x + pd.core.common.random_state().random_sample(len(x))\n",
]
CAUGHT["reaches_original"] += [
    "import builtins\ndef evaluate(x):\n    return getattr(builtins, 'ex' + 'ec')('1')\n",
    "def evaluate(x):\n    return getattr(np, 'c' 'ompile')\n",
    "def evaluate(x):\n    return __builtins__['eval']('x')\n",
]
CAUGHT["reads_forbidden"] += [
    "def evaluate(x):\n    path = 'orig' + 'inal' + '/u' + 'df.py'\n    return x\n",
    "def evaluate(x):\n    path = ''.join(['.ae', 'ther'])\n    return x\n",
    "def evaluate(x):\n    path = f\"{'orig'}inal\"\n    return x\n",
    "def evaluate(x, name='sqrt'):\n    return getattr(np, name)(x)\n",
]
CAUGHT["row_at_a_time"] += [
    "def evaluate(x):\n    return pd.Series(list(map(abs, x)))\n",
    "def evaluate(x):\n    return pd.Series(list(filter(None, x)))\n",
    "import itertools\ndef evaluate(a, b):\n    return pd.Series(list(itertools.starmap(pow, zip(a, b))))\n",
    "import functools\ndef evaluate(x):\n    return functools.reduce(lambda acc, v: acc + v, x)\n",
    "def evaluate(x):\n    return pd.Series(sorted(x, key=lambda v: -v))\n",
    "def evaluate(x):\n    return pd.Series(np.frompyfunc(abs, 1, 1)(x))\n",
    "def evaluate(a, b):\n    return a.combine(b, max)\n",
    "def evaluate(x):\n    return x.str.replace('a', lambda m: m.group(0).upper(), regex=True)\n",
]
ROW_AT_A_TIME_SQL = [
    "def build(x):\n    return F.udf(lambda v: v, 'double')(x)\n",
    "from pyspark.sql.functions import pandas_udf\ndef build(x):\n    return pandas_udf(lambda s: s, 'double')(x)\n",
]


@pytest.mark.parametrize(("rule", "body"), [(rule, body) for rule, bodies in CAUGHT.items() for body in bodies])
def test_each_rule_catches_its_pattern(rule, body):
    kind = "sql" if "def build" in body else "vectorized"
    assert rule in rules(body, kind)


@pytest.mark.parametrize("body", ROW_AT_A_TIME_SQL)
def test_a_python_udf_inside_a_sql_build_is_row_at_a_time(body):
    assert "row_at_a_time" in rules(body, "sql")


def test_hard_coding_needs_a_literal_from_the_cases_that_the_original_lacks():
    body = "def evaluate(x):\n    return pd.Series(np.where(x == 1234.5, 9.75, x * 2))\n"
    assert "hard_coded" in rules(body, cases={1234.5, 9.75}, original={2})
    assert "hard_coded" not in rules(body, cases={1234.5, 9.75}, original={1234.5, 9.75, 2})
    assert "hard_coded" not in rules(body, cases=set(), original={2})
    lookup = "KNOWN = {'\\tgold ': 72.0}\ndef evaluate(x):\n    return x.map(KNOWN)\n"
    assert "hard_coded" in rules(lookup, cases={"\tgold ", 72.0})
    sql = "def build(tier):\n    return F.when(tier.isin('GOLD'), F.lit(72.0))\n"
    assert "hard_coded" in rules(sql, "sql", cases={"GOLD", 72.0})


def test_a_literal_from_the_originals_number_grammar_or_its_patterns_characters_is_not_hard_coding():
    from aether_mcp.judge.case_literals import source_literals

    # the original relies on float()'s grammar ("inf", "nan") and deletes '$' with a character class
    original = source_literals("import re\ndef parse(text):\n    return float(re.sub(r'[$,]', '', text))\n")
    body = "def evaluate(text):\n    cleaned = text.str.replace('$', '').str.replace(',', '')\n    return cleaned.where(~cleaned.str.lower().isin(['inf', 'nan', 'Infinity']), cleaned)\n"
    assert "hard_coded" not in rules(body, cases={"$", "inf", "nan", "Infinity"}, original=original)
    assert "hard_coded" in rules(body, cases={"$", "inf"}, original=source_literals("def parse(text):\n    return text.strip()\n"))  # no float(), no '$'
    taken = "def evaluate(text):\n    return text.where(text != '$1,200', '1200')\n"
    assert "hard_coded" in rules(taken, cases={"$1,200", "1200"}, original=original)  # whole case values are still the cases'


def test_trivial_literals_shared_with_the_cases_are_not_hard_coding():
    body = "def evaluate(x):\n    return pd.Series(np.where(x == 0, 1, -1))\n"
    assert rules(body, cases={0, 1, -1}) == set()


HONEST = [
    "class Scaled(dict):\n    def __init__(self, factor):\n        super().__init__(factor=factor)\n        self.factor = factor\ndef evaluate(x):\n    return x * Scaled(2).factor\n",
    "import aether_mcp.backend as backend\ndef evaluate(x):\n    return backend.series(backend.xp.abs(backend.array(x)))\n",
    "from aether_mcp.backend import struct, synchronize, xdf\ndef evaluate(x):\n    synchronize()\n    return struct({'a': xdf.Series(x)}, null=x.isna())\n",
    "import warnings\ndef evaluate(x):\n    with warnings.catch_warnings():\n        warnings.simplefilter('ignore', RuntimeWarning)\n        return x / 2\n",
    "import warnings\ndef evaluate(x):\n    with warnings.catch_warnings(action='ignore', category=FutureWarning, record=False):\n        return x\n",
    "import warnings\ndef evaluate(x):\n    if x.isna().all():\n        warnings.warn('an all-null batch', RuntimeWarning)\n    return x\n",
    "from warnings import warn\ndef evaluate(x):\n    warn(message='m', category=UserWarning)\n    return x\n",
    # np.where / np.select with a dictionary of constants and a helper for the conditions
    """
    GRADES = {"A": 90, "B": 75}

    def _conditions(values):
        return [values >= floor for floor in GRADES.values()]

    def evaluate(score):
        values = score.to_numpy(dtype="int64", na_value=0)
        return pd.Series(np.select(_conditions(values), list(GRADES), default="C"))
    """,
    # pandas .str accessors and Series.map with a dict
    """
    RATES = {"gold": 0.1, "silver": 0.05}

    def evaluate(tier, amount):
        key = tier.str.strip().str.lower()
        return amount * (1 - key.map(RATES).fillna(0.0))
    """,
    # a loop over a fixed handful of columns, not over rows
    """
    def evaluate(a, b, c):
        total = a.copy()
        for column in (b, c):
            total = total + column
        return total
    """,
    # a copy of the input may be written
    """
    def evaluate(x):
        x = x.copy()
        x[x < 0] = 0
        return x
    """,
    # catching the one exception expected, and re-raising a broad one
    """
    def evaluate(x):
        try:
            values = x.to_numpy(dtype="float64")
        except TypeError:
            values = x.astype("float64").to_numpy()
        try:
            return pd.Series(values * 2)
        except Exception as exc:
            raise ValueError("bad batch") from exc
    """,
    # a numba kernel: loops inside device code are per thread, which is the point
    """
    from numba import cuda

    @cuda.jit
    def _kernel(out, x):
        i = cuda.grid(1)
        for k in range(3):
            if i < out.size:
                out[i] = x[i] * k

    def evaluate(x):
        out = np.zeros(len(x))
        _kernel.forall(len(x))(out, x.to_numpy())
        return pd.Series(out)
    """,
    # an import of cupy with a NumPy fallback
    """
    try:
        import cupy as xp
    except ImportError:
        xp = np

    def evaluate(x):
        return pd.Series(xp.abs(xp.asarray(x.to_numpy())))
    """,
]
# dates parsed and formatted from the arguments, seeded generators and name-based UUIDs depend on nothing else
HONEST += [
    """
    import datetime
    import time
    import uuid

    def evaluate(x):
        parsed = datetime.datetime.strptime("2020-01-01", "%Y-%m-%d")
        stamp = time.strftime("%Y", time.gmtime(0))
        noise = np.random.default_rng(7).random(len(x))
        return x + noise * 0 if parsed.year and stamp and uuid.uuid5(uuid.NAMESPACE_DNS, "a") else x
    """,
]
# numba's own signatures and kernels, maps over dicts built with dict() or a comprehension; docstrings and a main
# guard that spell dunders
HONEST += [
    '''
    """Scales like the original's __call__ did."""

    def evaluate(x):
        """Returns x doubled (the original's __mul__)."""
        return x * 2

    if __name__ == "__main__":
        print(evaluate(pd.Series([1.0])))
    ''',
    """
    import calendar
    import numba
    from numba import cuda

    MONTHS = dict(enumerate(calendar.month_abbr))
    CODES = {name: i for i, name in enumerate(("a", "b"))}

    @numba.vectorize(["float64(float64, float64)"])
    def scaled(value, factor):
        return value * factor

    @cuda.jit
    def kernel(values, out):
        i = cuda.grid(1)
        if i < values.size:
            out[i] = values[i] * 2.0

    def evaluate(x):
        return pd.Series(scaled(x.to_numpy(), 2.0)).map(MONTHS).map(CODES)
    """,
]
# the closed language leaves ordinary code alone: allowed modules as module.name, deep public chains through them,
# a fallback alias, a backend's module name, a class's own private state and constructors through super()
HONEST += [
    """
    class BadInput(ValueError):
        def __init__(self, column):
            super().__init__(f"bad column {column}")

    PANDAS_2 = pd.__version__ >= "2"

    def evaluate(x):
        if x.isna().all():
            raise BadInput(x.name)
        return x.fillna(0) if PANDAS_2 else x
    """,
    """
    from numpy import linalg
    from decimal import ROUND_HALF_UP, Decimal

    def evaluate(x):
        norm = linalg.norm(x.to_numpy())
        return pd.Series(x.to_numpy() / norm) if pd.api.types.is_float_dtype(x) else x
    """,
    """
    class Scaler:
        def __init__(self, factor):
            self._factor = factor

        def apply_to(self, values):
            return values * self._factor

    def evaluate(x):
        kind = np.__name__
        return pd.Series(Scaler(2.0).apply_to(x.to_numpy())) if kind == "numpy" else x
    """,
]
HONEST_SQL = [
    """
    TIER_RATES = {"gold": 0.10, "silver": 0.05}

    def build(tier, amount):
        rate = F.lit(0.0)
        for name, value in TIER_RATES.items():
            rate = F.when(F.lower(F.trim(tier)) == name, F.lit(value)).otherwise(rate)
        return [("_rate", rate), ("result", amount * (1 - F.col("_rate")))]
    """,
    """
    def build(x):
        return F.when(x.isNull(), F.lit(None)).otherwise(F.regexp_replace(x, "^mailto:", ""))
    """,
]


# Per-row device-to-host copies in a device-capable module (aether_mcp.backend, CuPy, cuDF, numba.cuda):
# each body with the text of the line the finding must point at.
DEVICE_ROW_COPIES = [
    (
        "from aether_mcp.backend import xp, array, series\ndef evaluate(x):\n    xp_values = array(x)\n    return series([float(v) for v in xp_values])\n",
        "return series([float(v) for v in xp_values])",
    ),
    (
        "import cudf\ndef evaluate(s):\n    out = np.zeros(len(s))\n    for i in range(len(s)):\n        out[i] = s.iloc[i] * 2\n    return cudf.Series(out)\n",
        "out[i] = s.iloc[i] * 2",
    ),
    (
        "import cupy as cp\ndef evaluate(x):\n    values = cp.asarray(x)\n    out = cp.zeros(len(values))\n    for i in range(len(values)):\n        out[i] = values[i].item() * 2\n    return out\n",
        "out[i] = values[i].item() * 2",
    ),
    (
        "from aether_mcp.backend import xp, series\ndef evaluate(x):\n    doubled = xp.asarray(x) * 2\n    return series(doubled.tolist())\n",
        "return series(doubled.tolist())",
    ),
    (
        "from aether_mcp.backend import array, series\ndef evaluate(x):\n    values = array(x)\n    out = []\n    for v in values:\n        out.append(v * 2)\n    return series(out)\n",
        "for v in values:",
    ),
    (
        "import cudf\ndef evaluate(a, b):\n    return cudf.Series([p.iat[0] for p in (a, b)] + [a.iat[i] + b.iat[i] for i in range(len(a))])\n",
        "return cudf.Series(",
    ),
    (
        "from aether_mcp.backend import xdf\ndef evaluate(x):\n    return xdf.Series(list(x))\n",
        "return xdf.Series(list(x))",
    ),
]


@pytest.mark.parametrize(("body", "line"), DEVICE_ROW_COPIES)
def test_a_per_row_copy_from_the_device_is_a_host_round_trip(body, line):
    source = HEADER + body
    findings = [f for f in cheat_rules.check_candidate(source, "candidate/c.py", "vectorized", set(), set(), "evaluate") if f.rule == "host_round_trip"]
    assert findings, body
    assert all(f.severity == "block" for f in findings)
    assert any(line in f.evidence and "per-row device-to-host copy" in f.evidence for f in findings), [f.evidence for f in findings]


def test_the_same_loops_inside_a_cuda_kernel_are_per_thread_not_host_copies():
    body = """
    from numba import cuda

    @cuda.jit
    def _kernel(out, x):
        i = cuda.grid(1)
        if i < out.size:
            total = 0.0
            for k in range(len(x)):
                total += float(x[k])
            for v in x:
                total += v
            out[i] = total

    def evaluate(x):
        out = np.zeros(len(x))
        _kernel.forall(len(x))(out, x.to_numpy(dtype="float64", na_value=0.0))
        return pd.Series(out)
    """
    assert rules(body) == set()
    assert rules(body, "kernel") == set()


def test_a_loop_over_a_tuple_of_columns_in_a_backend_candidate_is_not_per_row():
    body = """
    from aether_mcp.backend import xp, array, series

    def evaluate(a, b):
        total = xp.zeros(len(a))
        for column in (a, b):
            total = total + array(column, dtype="float64", na_value=0.0)
        arrays = [array(s) for s in (a, b)]
        return series(total + arrays[0], null=xp.isnan(arrays[1]), index=a.index)
    """
    assert rules(body) == set()


def test_host_conversions_in_a_numpy_only_candidate_are_not_host_round_trips():
    honest = "def evaluate(x):\n    values = x.to_numpy(dtype='float64', na_value=0.0)\n    return pd.Series(values.tolist()) * values.sum().item()\n"
    assert rules(honest) == set()
    per_row = "def evaluate(x):\n    out = []\n    for i in range(len(x)):\n        out.append(float(x.to_numpy()[i]) + x.iloc[i].item())\n    return pd.Series(out)\n"
    assert rules(per_row) == {"row_at_a_time"}  # slow, but no device to copy from


@pytest.mark.parametrize("body", HONEST)
def test_honest_vectorized_idioms_raise_nothing(body):
    assert rules(body) == set()


@pytest.mark.parametrize("body", HONEST_SQL)
def test_honest_sql_idioms_raise_nothing(body):
    assert rules(body, "sql") == set()


def test_findings_say_where_why_and_how_to_fix():
    source = HEADER + "def evaluate(x):\n    return x.apply(lambda v: v + 1)\n"
    (finding,) = cheat_rules.check_candidate(source, "candidate/c.py", "vectorized", set(), set(), "evaluate")
    assert finding.file == "candidate/c.py" and finding.line == 5
    assert "x.apply(lambda v: v + 1)" in finding.evidence and ".apply() runs Python per row" in finding.evidence
    assert finding.why == cheat_rules.WHY["row_at_a_time"] and "np.where" in finding.fix


def test_workspace_modules_a_candidate_imports_are_found(tmp_path):
    (tmp_path / "candidate").mkdir()
    (tmp_path / "candidate" / "helpers.py").write_text("X = 1\n")
    (tmp_path / "shared.py").write_text("Y = 2\n")
    found = cheat_rules.imported_workspace_modules("import helpers\nfrom shared import Y\nimport numpy\n", tmp_path / "candidate", tmp_path)
    assert found == [tmp_path / "candidate" / "helpers.py", tmp_path / "shared.py"]


def test_every_rule_has_a_why_and_a_fix():
    assert set(cheat_rules.WHY) == set(cheat_rules.FIX)
    # hard_coded and batch_dependent have tests of their own; no_device_work comes only from device
    # counters on the GPU backend (test_backends judges recorded reports); watch_dependent only from
    # comparing watched outputs (test_red_team); hides_failures only from byte_compare's raise matching (test_raises);
    # fails_in_job only from the audit's import of the candidate before any SparkSession exists (test_red_team)
    assert set(CAUGHT) | {"hard_coded", "batch_dependent", "no_device_work", "watch_dependent", "hides_failures", "fails_in_job"} == set(cheat_rules.WHY)


def test_sql_expressions_are_held_to_an_allow_list_of_context_free_classes():
    from aether_mcp.judge import sql_functions

    honest = ["Alias", "CaseWhen", "AttributeReference", "Literal", "Pmod", "Lower", "StringTrim", "RaiseError", "ArrayTransform", "LambdaFunction"]
    assert sql_functions.refused(honest) == []
    refused = dict(sql_functions.refused(["Add", "CurrentTimestamp", "SparkPartitionID", "Rand", "CallMethodViaReflection", "PythonUDF", "SomeFutureFunction"]))
    assert list(refused) == ["CurrentTimestamp", "SparkPartitionID", "Rand", "CallMethodViaReflection", "PythonUDF", "SomeFutureFunction"]
    assert "the current time" in refused["CurrentTimestamp"] and "the partition a row is in" in refused["SparkPartitionID"]
    assert "not on the allow-list" in refused["PythonUDF"] and "not on the allow-list" in refused["SomeFutureFunction"]
    assert "current_timestamp" in sql_functions.spellings("CurrentTimestamp") and "spark_partition_id" in sql_functions.spellings("SparkPartitionID")
