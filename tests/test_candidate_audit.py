"""The watch the audit puts around a candidate: tripwire, forbidden opens, Python steps per row, checksums."""

import os
import textwrap
import types

import numpy as np
import pandas as pd
import pytest

from aether_mcp.confined import watch as candidate_audit


def candidate(tmp_path, source: str) -> tuple[types.ModuleType, str]:
    path = tmp_path / "candidate" / "c.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(source))
    module = types.ModuleType("watched_candidate")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module, str(path)


def steps(module, filename: str, rows: int, excluded=None) -> int:
    series = pd.Series(np.arange(rows, dtype="float64"))
    with candidate_audit.Watch(filename, excluded) as watch:
        module.evaluate(series)
    return watch.calls


LOOP = """
import pandas as pd

def evaluate(x):
    out = []
    for v in x:
        out.append(v * 2)
    return pd.Series(out)
"""
CALLBACK = """
def _double(v):
    return v * 2

def evaluate(x):
    return x.map(_double)
"""
VECTORIZED = """
import numpy as np

def _scale(values, factor):
    return values * factor

def evaluate(x):
    values = x.to_numpy()
    return _scale(np.where(values > 1, values, 0.0), 2)
"""


@pytest.mark.parametrize("source", [LOOP, CALLBACK])
def test_per_row_python_shows_as_steps_that_grow_with_the_rows(tmp_path, source):
    module, filename = candidate(tmp_path, source)
    small, large = steps(module, filename, 100), steps(module, filename, 2000)
    assert large > 2 * small + 10


def test_whole_column_code_takes_the_same_steps_for_any_size(tmp_path):
    module, filename = candidate(tmp_path, VECTORIZED)
    assert steps(module, filename, 100) == steps(module, filename, 20_000) > 0


def test_code_outside_the_candidate_is_not_counted(tmp_path):
    module, filename = candidate(tmp_path, CALLBACK)
    assert steps(module, str(tmp_path / "elsewhere.py"), 1000) == 0
    assert steps(module, filename, 1000, excluded={module._double.__code__}) < 10


def test_the_tripwire_records_and_refuses_the_original(tmp_path):
    module, filename = candidate(tmp_path, "def evaluate(x):\n    import importlib\n    return importlib.import_module('orig' + 'inal.udf').fee(x)\n")
    candidate_audit.install(str(tmp_path))
    with candidate_audit.Watch(filename) as watch:
        with pytest.raises(candidate_audit.TripwireTriggered, match="original.udf.fee was called"):
            module.evaluate(pd.Series([1.0]))
    assert "tripwire: imported original.udf" in watch.events and "tripwire: used original.udf.fee" in watch.events


def test_opening_tests_or_the_original_from_the_candidate_is_recorded(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "cases.py").write_text("CASES = []\n")
    (tmp_path / "notes.md").write_text("mine\n")
    module, filename = candidate(tmp_path, f"def evaluate(x):\n    open({str(tmp_path / 'notes.md')!r}).read()\n    open({str(tmp_path / 'tests' / 'cases.py')!r}).read()\n    return x\n")
    candidate_audit.install(str(tmp_path))
    with candidate_audit.Watch(filename) as watch:
        module.evaluate(pd.Series([1.0]))
    assert watch.events == [f"opened tests{os.sep}cases.py"]
    with open(tmp_path / "tests" / "cases.py") as handle:  # outside a watch nothing is recorded
        handle.read()
    assert candidate_audit._state["events"] == [f"opened tests{os.sep}cases.py"] and not candidate_audit._state["active"]


def test_threads_left_running_are_counted(tmp_path):
    module, filename = candidate(tmp_path, "import threading, time\n\ndef evaluate(x):\n    threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n    return x\n")
    with candidate_audit.Watch(filename) as watch:
        module.evaluate(pd.Series([1.0]))
    assert watch.threads_left == 1 and watch.children_left == 0


def test_checksums_see_in_place_changes():
    series = [pd.Series([1.0, -2.0, None], dtype="Float64"), pd.Series(["a", None, "b"], dtype="string")]
    before = candidate_audit.checksum(series)
    assert candidate_audit.checksum([s.copy() for s in series]) == before
    series[0][1] = 2.0
    assert candidate_audit.checksum(series) != before


def test_audit_refusals_come_before_any_spark_work(root, workspace):
    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp.tools import files
    from aether_mcp.tools.cheat_audit import audit_candidate

    files.write_file(root, workspace, "candidate/broken.py", "TARGET = 'vectorized'\n\ndef evaluate(weight, express)\n    return weight\n")
    with pytest.raises(ToolError, match="candidate/broken.py has a syntax error at line 3.*and audit again"):
        audit_candidate(root, None, workspace, "broken", hidden_rows_count=1000)
    with pytest.raises(ToolError, match="hidden_rows must be between 1000 and 200000"):
        audit_candidate(root, None, workspace, "broken", hidden_rows_count=999)
    with pytest.raises(ToolError, match="watched_rows must be positive and grow at least fourfold"):
        audit_candidate(root, None, workspace, "broken", watched_rows=(1000, 2000))
