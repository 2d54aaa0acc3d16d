"""The watch in confined processes: an audit hook the candidate cannot remove, the step counter, the tripwire.

Each test runs its candidate in a fresh interpreter, as a confined worker runs one: the watch
is installed first, then the candidate's file is loaded from its source and called. The hook
stays for the life of a process, so it is never installed in the test session itself.
"""

import json
import subprocess
import sys
import textwrap

import pytest

DRIVER = textwrap.dedent(
    """
    import json, sys, types
    import numpy as np
    import pandas as pd
    from aether_mcp.confined import watch

    path, rows, count_steps = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    watch.install([path.rsplit("/", 1)[0]])
    module = types.ModuleType("watched_candidate")
    module.__file__ = path
    exec(compile(open(path).read(), path, "exec"), module.__dict__)
    watch.drain()  # loading is not what these tests count
    series = pd.Series(np.arange(rows, dtype="float64"))
    outcome = {}
    try:
        if count_steps:
            with watch.Watch() as watched:
                module.evaluate(series)
            outcome["calls"] = watched.calls
            outcome["threads_left"] = watched.threads_left
        else:
            module.evaluate(series)
        outcome["raised"] = None
    except BaseException as exc:
        outcome["raised"] = f"{type(exc).__name__}: {exc}"
    outcome["events"] = watch.drain()
    print(json.dumps(outcome))
    """
)


def watched(tmp_path, source: str, rows: int = 10, count_steps: bool = False) -> dict:
    """Run `source`'s evaluate on `rows` rows in a fresh interpreter under the watch."""
    folder = tmp_path / "candidate"
    folder.mkdir(exist_ok=True)
    path = folder / "c.py"
    path.write_text(textwrap.dedent(source))
    ended = subprocess.run([sys.executable, "-I", "-c", DRIVER, str(path), str(rows), "1" if count_steps else "0"], capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr
    return json.loads(ended.stdout.strip().splitlines()[-1])


def events(outcome: dict) -> set[str]:
    return {event["event"] for event in outcome["events"]}


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
# C-level iteration calling a function the candidate did not define in its file (issue 15)
BUILTIN_MAP = """
import textwrap
import pandas as pd

def evaluate(x):
    return pd.Series(list(map(textwrap.dedent, x.astype(str))))
"""
SORTED_KEY = """
import pandas as pd

def evaluate(x):
    return pd.Series(sorted(x, key=lambda v: -v))
"""
VECTORIZED = """
import numpy as np

def _scale(values, factor):
    return values * factor

def evaluate(x):
    values = x.to_numpy()
    return _scale(np.where(values > 1, values, 0.0), 2)
"""


@pytest.mark.parametrize("source", [LOOP, CALLBACK, BUILTIN_MAP, SORTED_KEY], ids=["loop", "series_map", "builtin_map", "sorted_key"])
def test_per_row_python_shows_as_steps_that_grow_with_the_rows(tmp_path, source):
    small = watched(tmp_path, source, 100, count_steps=True)["calls"]
    large = watched(tmp_path, source, 2000, count_steps=True)["calls"]
    assert large > 2 * small + 10, (small, large)


def test_whole_column_code_takes_the_same_steps_for_any_size(tmp_path):
    assert watched(tmp_path, VECTORIZED, 100, count_steps=True)["calls"] == watched(tmp_path, VECTORIZED, 20_000, count_steps=True)["calls"] > 0


def test_switching_the_step_counter_off_is_refused_and_recorded(tmp_path):
    # issue 15, class 2: sys.settrace(None) as the first line of evaluate
    outcome = watched(tmp_path, "import sys\n\ndef evaluate(x):\n    sys.settrace(None)\n    return x\n", count_steps=True)
    assert outcome["raised"].startswith("WatchRefused")
    assert [(e["event"], e["line"], e["refused"]) for e in outcome["events"]] == [("sys.settrace", 4, True)]


def test_relabelling_code_to_hide_per_row_work_is_refused_and_recorded(tmp_path):
    # issue 15, class 2: __code__.replace(co_filename=...) + types.FunctionType
    source = """
    import types

    def _row(v):
        return v * 2

    def evaluate(x):
        code = _row.__code__.replace(co_filename="/numpy/core.py")
        hidden = types.FunctionType(code, {})
        return x.map(hidden)
    """
    outcome = watched(tmp_path, source)
    assert outcome["raised"].startswith("WatchRefused")
    assert events(outcome) & {"object.__getattr__", "code.__new__"}


def test_reading_the_original_through_io_fileio_and_a_double_slash_is_refused_and_recorded(tmp_path):
    # issue 15, classes 2 and 4: io.FileIO on a //-prefixed path, exec looked up with getattr
    secret = tmp_path / "original" / "udf.py"
    secret.parent.mkdir()
    secret.write_text("def fee(x):\n    return x\n")
    source = f"""
    import builtins, io

    def evaluate(x):
        text = io.FileIO("/" + {str(secret)!r}).read()
        getattr(builtins, "ex" + "ec")(text)
        return x
    """
    outcome = watched(tmp_path, source)
    assert outcome["raised"].startswith("WatchRefused")
    [opened] = [e for e in outcome["events"] if e["event"] == "open"]
    assert opened["detail"] == f"{secret} (read)" and opened["refused"] and opened["line"] == 5


def test_executing_code_made_at_run_time_is_recorded(tmp_path):
    outcome = watched(tmp_path, "def evaluate(x):\n    exec(compile('y = 1', '<x>', 'exec'))\n    return x\n")
    assert {"compile", "exec"} <= events(outcome)


def test_frames_and_the_garbage_collector_are_out_of_reach(tmp_path):
    for body in ("import sys\n    sys._getframe(1)", "import gc\n    gc.get_objects()", "import inspect\n    inspect.stack()"):
        outcome = watched(tmp_path, f"def evaluate(x):\n    {body}\n    return x\n")
        assert outcome["raised"].startswith("WatchRefused"), body
        assert events(outcome) & {"sys._getframe", "gc.get_objects"}, body


def test_writing_outside_the_agents_folders_and_starting_processes_are_refused(tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outcome = watched(tmp_path, f"def evaluate(x):\n    open({str(outside)!r}, 'w').write('state')\n    return x\n")
    assert outcome["raised"].startswith("WatchRefused") and not outside.exists()
    assert outcome["events"][0]["detail"].endswith("(write)")
    outcome = watched(tmp_path, "import subprocess\n\ndef evaluate(x):\n    subprocess.run(['true'])\n    return x\n")
    assert outcome["raised"].startswith("WatchRefused") and "subprocess.Popen" in events(outcome)


def test_reading_the_process_layout_is_refused_and_recorded_by_every_route(tmp_path):
    # issue 29, class 1: a job's executors and a judged worker differ in their command lines,
    # environments, parents and process tables, so the attempt to look is itself the finding,
    # whichever frame opens the file (the agent's own, the standard library's, a library reader's)
    routes = {
        "open /proc/1/cmdline": ("open", "/proc/1/cmdline", "def evaluate(x):\n    open('/proc/1/cmdline', 'rb').read()\n    return x\n"),
        "pathlib, own environ": ("open", "/proc/", "import pathlib\n\ndef evaluate(x):\n    pathlib.Path('/proc/self/environ').read_bytes()\n    return x\n"),
        "NumPy reader, parent": ("open", "/proc/", "import numpy as np\n\ndef evaluate(x):\n    np.fromfile('/proc/self/../1/cmdline', dtype='uint8')\n    return x\n"),
        "pandas reader, cgroup": ("open", "/sys/", "import pandas as pd\n\ndef evaluate(x):\n    pd.read_csv('/sys/fs/cgroup/cpu.max')\n    return x\n"),
        "process table": ("os.listdir", "/proc", "import os\n\ndef evaluate(x):\n    return x + len(os.listdir('/proc'))\n"),
        "scandir": ("os.scandir", "/proc", "import os\n\ndef evaluate(x):\n    return x + len(list(os.scandir('/proc/self/fd')))\n"),
    }
    for route, (event, where, source) in routes.items():
        outcome = watched(tmp_path, source)
        assert outcome["raised"].startswith("WatchRefused"), (route, outcome["raised"])
        seen = [e for e in outcome["events"] if e["event"] == event]
        assert seen and seen[0]["detail"].startswith(where) and "process layout" in seen[0]["detail"], (route, outcome["events"])
        assert seen[0]["refused"] and seen[0]["file"].endswith("c.py"), route


def test_imports_outside_the_allow_list_are_recorded(tmp_path):
    outcome = watched(tmp_path, "def evaluate(x):\n    import sqlite3\n    return x\n")
    assert [(e["event"], e["detail"]) for e in outcome["events"]] == [("import", "sqlite3")]


def test_honest_whole_column_code_raises_no_event(tmp_path):
    outcome = watched(tmp_path, VECTORIZED, 1000)
    assert outcome["raised"] is None and outcome["events"] == []


def test_the_tripwire_refuses_the_original(tmp_path):
    outcome = watched(tmp_path, "def evaluate(x):\n    import importlib\n    return importlib.import_module('orig' + 'inal.udf').fee(x)\n")
    assert outcome["raised"] == "TripwireTriggered: original.udf.fee was called"


def test_starting_a_thread_for_agent_code_is_refused_by_every_route(tmp_path):
    # no audit event exists for a new thread: the guards that replace the primitives raise one
    routes = {
        "threading": "import threading, time\n\ndef evaluate(x):\n    threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n    return x\n",
        "executor": "from concurrent.futures import ThreadPoolExecutor\n\ndef evaluate(x):\n    with ThreadPoolExecutor(2) as pool:\n        return pool.submit(lambda: x * 2).result()\n",
        "another module's _thread": "import dataclasses\n\ndef evaluate(x):\n    dataclasses._thread.start_new_thread(print, ('hidden',))\n    return x\n",
    }
    for route, source in routes.items():
        outcome = watched(tmp_path, source)
        assert outcome["raised"].startswith("WatchRefused"), route
        (event,) = [e for e in outcome["events"] if e["event"] == "_thread.start_new_thread"]
        assert event["refused"] and event["file"].endswith("c.py") and event["line"], route


def test_network_use_below_agent_code_is_refused_and_recorded(tmp_path):
    # direct, through the standard library, and through a library's own frames (pandas given a URL)
    routes = {
        "sendto": ("import calendar\n\ndef evaluate(x):\n    net = calendar.sys.modules['socket']\n    net.socket(net.AF_INET, net.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))\n    return x\n", "socket.sendto"),
        "urllib": ("import urllib.request\n\ndef evaluate(x):\n    urllib.request.urlopen('http://127.0.0.1:9/', timeout=1)\n    return x\n", "socket.getaddrinfo"),
        "pandas reader": ("import pandas as pd\n\ndef evaluate(x):\n    pd.read_json('http://127.0.0.1:9/rows.json')\n    return x\n", "socket.getaddrinfo"),
    }
    for route, (source, expected) in routes.items():
        outcome = watched(tmp_path, source)
        assert outcome["raised"].startswith(("WatchRefused", "URLError")), (route, outcome["raised"])
        assert expected in events(outcome), (route, outcome["events"])
        assert all(e["file"].endswith("c.py") for e in outcome["events"] if e["event"].startswith("socket.")), route


def test_module_state_is_digested_by_content_whatever_writes_it():
    import types

    import numpy as np

    from aether_mcp.confined.watch import module_state

    module = types.ModuleType("candidate_state")
    module.__file__ = "/candidate/c.py"
    source = (
        "import numpy as np, pandas as pd\n"
        "SEEN = np.zeros(1)\nTABLE = pd.DataFrame({'k': [1, 2], 'v': [0.5, 1.5]})\nRATES = {'a': (1, 2)}\nLOG = []\n"
        "def helper(x, _memo={}):\n    return x\n"
        "import decimal\nMONEY = decimal.Context(prec=40)\n"
    )
    exec(compile(source, module.__file__, "exec"), vars(module))
    before = module_state(module)
    module.TABLE["v"].sum()  # reading a frame fills pandas' caches: not the candidate's state
    module.MONEY.divide(module.decimal.Decimal(1), module.decimal.Decimal(3))  # sets the context's flags, not its settings
    assert module_state(module) == before
    np.add(module.SEEN, 3, out=module.SEEN)
    module.LOG.append(1)
    module.helper.__defaults__[0]["seen"] = 1
    after = module_state(module)
    assert sorted(name for name in before if before[name] != after[name]) == ["LOG", "SEEN", "helper"]
    assert after["np"] == before["np"] and after["RATES"] == before["RATES"]


def test_checksums_see_in_place_changes():
    import pandas as pd

    from aether_mcp.confined.watch import checksum

    series = [pd.Series([1.0, -2.0, None], dtype="Float64"), pd.Series(["a", None, "b"], dtype="string")]
    before = checksum(series)
    assert checksum([s.copy() for s in series]) == before
    series[0][1] = 2.0
    assert checksum(series) != before


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



BATCHES = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from aether_mcp.confined import arrow_batches

    path, size, audit, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "audit", sys.argv[4] == "repeat"
    if audit:
        from aether_mcp.confined import watch
        watch.install()
    mapper = arrow_batches.make_mapper(open(path).read(), "digest", path, "evaluate", pa.int64(), audit=audit)
    # (repeat: the second batch holds the first one's values again, as the next layout of the same rows does)
    batches = [pa.RecordBatch.from_arrays([pa.array(range(start, start + size), pa.int64()), pa.array(range(0 if repeat else start, (0 if repeat else start) + size), pa.int64())], names=["id", "n"]) for start in (0, size)]
    out = [batch.to_pydict() for batch in mapper(iter(batches))]
    module = next(iter(arrow_batches._LOADED.values()))
    calls, traced = module.CALLS, getattr(module, "TRACED", None)
    steps = [json.loads(b[arrow_batches.AUDIT][0]) for b in out] if audit else None
    print(json.dumps({"outputs": [b[arrow_batches.OUTPUT] for b in out], "errors": [b[arrow_batches.ERROR] for b in out], "calls": calls, "traced": traced, "audit": steps}))
    """
)


def _two_batches(tmp_path, checks: str, size: int = 8, audit: bool = False, repeat: bool = False) -> dict:
    """Rows 0-7 and 8-15 (or of another `size`; `repeat`: 0-7 twice) in two Arrow batches, in one worker process, through
    a candidate that records each call's length, runs `checks`, and returns n * 2: the outputs, the errors, the calls'
    lengths and (`audit`) each batch's audit report."""
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "candidate.py"
    path.write_text("CALLS = []\n\n\ndef evaluate(n):\n    CALLS.append(len(n))\n" + textwrap.indent(textwrap.dedent(checks), "    ") + "    return n * 2\n")
    argv = [sys.executable, "-c", BATCHES, str(path), str(size), "audit" if audit else "run", "repeat" if repeat else "new"]
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_a_batch_the_watch_refuses_reports_the_refusal_on_every_row_without_a_call_per_row(tmp_path):
    # A row that raises on its own is isolated by halving its batch; a batch on which the watch refused what the
    # candidate did is not halved (that would repeat the refusal about twice per row): each of its rows says why.
    report = _two_batches(
        tmp_path,
        """
        if (n >= 8).any():
            open("/proc/1/cmdline").read()
        if (n == 3).any():
            raise ValueError("three")
        """,
    )
    first, second = report["errors"]
    assert first == [None, None, None, "ValueError: three", None, None, None, None]
    assert report["outputs"][0] == [0, 2, 4, None, 8, 10, 12, 14]
    assert all(error.startswith("WatchRefused: aether-mcp watch: open (/proc/1/cmdline") for error in second), second
    assert report["outputs"][1] == [None] * 8
    # the first batch halved down to its raising row, then the 7 others together; the refused batch: one call
    assert report["calls"] == [8, 4, 2, 2, 1, 1, 4, 7, 8]


def test_where_many_rows_raise_alone_each_row_is_tried_once_instead_of_halving_down_to_it(tmp_path):
    # A third of the rows raise alone (a UDF that refuses non-positive weights, on drawn weights): halving down to
    # each of them calls the candidate about 1.5 times per row. Once the rows resolved so far show that density,
    # each row of a failing part is tried once. Which rows raise, and the outputs of the others, are as halving finds.
    report = _two_batches(
        tmp_path,
        """
        if (n % 3 == 0).any():
            raise ValueError("a multiple of three")
        """,
        size=1_000,
    )
    for start, (outputs, errors) in zip((0, 1_000), zip(report["outputs"], report["errors"])):
        rows = range(start, start + 1_000)
        assert errors == [("ValueError: a multiple of three" if n % 3 == 0 else None) for n in rows]
        assert outputs == [(None if n % 3 == 0 else n * 2) for n in rows]
    # each batch: the whole, halves until the density shows (a few dozen calls), one call per row, the rest together
    assert len(report["calls"]) < 2 * (1_000 + 60), len(report["calls"])
    assert report["calls"].count(666) == 1 and report["calls"].count(667) == 1  # the 2 x 666/667 rows that return, together


def test_under_audit_the_isolations_calls_run_uncounted_and_the_count_comes_from_one_call_over_the_rows_that_return(tmp_path):
    # Under audit, steps are counted to see Python work grow with the rows. Isolating raising rows calls the candidate
    # about once a row by design, so those calls are not counted, and they run without the step counter (which makes
    # each call several times slower): the batch's whole call and the one call over the rows that return are counted.
    checks = """
    import sys
    TRACED.append(sys.gettrace() is not None)
    if (n % 3 == 0).any():
        raise ValueError("three")
    """
    report = _two_batches(tmp_path, "TRACED = globals().setdefault('TRACED', [])\n" + textwrap.dedent(checks), size=1_000, audit=True)
    traced = report["traced"]
    assert len(traced) == len(report["calls"]) > 2_000
    # per batch: the whole batch (counted), the isolation (not), then the rows that return (counted)
    first, second = report["calls"].index(1_000), report["calls"].index(1_000, 1)
    assert traced[first] and traced[second] and traced[second - 1] and traced[-1], traced[:3]
    assert not any(traced[first + 1 : second - 1]) and not any(traced[second + 1 : -1])
    assert [length for length, on in zip(report["calls"], traced) if on] == [1_000, 666, 1_000, 667]
    assert [audit["rows"] for audit in report["audit"]] == [666, 667] and report["audit"][0]["calls"] == report["audit"][1]["calls"] > 0


def test_rows_that_return_take_their_values_from_the_call_over_them_together_not_from_their_isolated_parts(tmp_path):
    # Where a third of the rows raise, nearly every multi-row batch holds one, so the rows that return were judged on the
    # parts they were isolated in (single rows). A candidate right on single rows and wrong on larger batches looked
    # equal there, while a job's batch without raising rows gets the wrong values: they now come from the call together.
    checks = """
    if (n % 3 == 0).any():
        raise ValueError("three")
    if len(n) > 1:
        return n * 3
    """
    report = _two_batches(tmp_path, checks, size=1_000)
    for start, outputs in zip((0, 1_000), report["outputs"]):
        assert outputs == [(None if n % 3 == 0 else n * 3) for n in range(start, start + 1_000)]


def test_rows_that_return_alone_but_fail_together_fail_as_the_jobs_batch_would(tmp_path):
    # Halving a failing batch finds the rows that raise alone; the rows left must then return together, as in a job's
    # batch without those rows. A candidate that fails only on batches above some size returns on every half, so
    # halving alone would heal it into rows that look equal, while every batch of the job fails.
    report = _two_batches(
        tmp_path,
        """
        if (n == 3).any():
            raise ValueError("three")
        if len(n) > 4:
            raise MemoryError("too many rows at once")
        """,
    )
    # the first batch: halved down to its raising row 3, then the 7 other rows together; the second: halved once
    assert report["calls"] == [8, 4, 2, 2, 1, 1, 4, 7, 8, 4, 4]
    assert report["outputs"] == [[None] * 8, [None] * 8]
    together = "MemoryError: too many rows at once (raised on the 7 rows of this batch that return alone, together: a job's batch holding them fails)"
    assert report["errors"][0] == [together] * 3 + ["ValueError: three"] + [together] * 4
    assert report["errors"][1] == ["MemoryError: too many rows at once (raised on this batch of 8 rows, though no row of it raises alone: a job's batch holding them fails)"] * 8


def test_rows_met_again_in_a_failing_batch_are_not_isolated_again_but_every_batch_and_its_rows_together_still_run(tmp_path):
    # The next layout of the same rows (and the next call) gives a worker the rows it has isolated before: a row called
    # alone before, or a part whose rows all returned alone, needs no call. The batch's own call and the call over the
    # rows that return together still run, and judge: a batch of the same rows that now fails together fails as the job's
    # would. A part holding a row that raised alone is still called: it may return with that row in it.
    dense = _two_batches(tmp_path / "dense", "if (n % 3 == 0).any():\n    raise ValueError('a multiple of three')\n", size=1_000, repeat=True)
    assert dense["errors"][0] == dense["errors"][1] == [("ValueError: a multiple of three" if n % 3 == 0 else None) for n in range(1_000)]
    assert dense["outputs"][0] == dense["outputs"][1] == [(None if n % 3 == 0 else n * 2) for n in range(1_000)]
    # the second batch: its own call, the halving until the density shows, a few for rows resolved in parts, the rows together
    second = dense["calls"][dense["calls"].index(1_000, 1) :]
    assert len(dense["calls"]) - len(second) > 1_000 and second[0] == 1_000 and second[-1] == 666 and len(second) < 60, second
    sparse = _two_batches(tmp_path / "sparse", "if (n == 3).any():\n    raise ValueError('three')\n", repeat=True)
    # rows 2 and 3 were called alone: their part [2, 3] is called (row 3 raised alone), the two rows are not
    assert sparse["calls"] == [8, 4, 2, 2, 1, 1, 4, 7] + [8, 4, 2, 2, 4, 7] and sparse["errors"][0] == sparse["errors"][1]
    assert sparse["outputs"][1] == [0, 2, 4, None, 8, 10, 12, 14]
    flaky = "if (n == 3).any():\n    raise ValueError('three')\nif len(n) > 4 and len(CALLS) > 9:\n    raise MemoryError('too many rows at once')\n"
    turned = _two_batches(tmp_path / "turned", flaky, repeat=True)
    assert turned["calls"] == [8, 4, 2, 2, 1, 1, 4, 7] + [8, 4, 2, 2, 4, 7] and turned["outputs"][0] == [0, 2, 4, None, 8, 10, 12, 14]
    together = "MemoryError: too many rows at once (raised on the 7 rows of this batch that return alone, together: a job's batch holding them fails)"
    assert turned["errors"][1] == [together] * 3 + ["ValueError: three"] + [together] * 4 and turned["outputs"][1] == [None] * 8
    # every row known: no isolating call at all, and still the batch's own call and the call together, which now fails
    known = _two_batches(tmp_path / "known", "if len(CALLS) > 4:\n    raise MemoryError('later')\nif (n == 1).any():\n    raise ValueError('one')\n", size=2, repeat=True)
    assert known["calls"] == [2, 1, 1, 1] + [2, 1] and known["outputs"] == [[0, None], [None, None]]
    assert known["errors"] == [[None, "ValueError: one"], ["MemoryError: later (raised on the 1 rows of this batch that return alone, together: a job's batch holding them fails)", "ValueError: one"]]


def test_a_row_that_raises_alone_but_returns_beside_others_still_goes_to_the_call_together(tmp_path):
    # A candidate that raises on row 0 alone but returns a value for it beside other rows, where the original raises on
    # it: a job's batch holding row 0 and no other raising row gets a value. The part [0, 5] that shows it is called
    # again in the second batch although row 0 raised alone in the first, so row 0 returns there, as before.
    checks = "if (n < 0).any():\n    raise ValueError('negative')\nif len(n) == 1 and (n == 0).any():\n    raise ValueError('zero')\n"
    path = tmp_path / "candidate.py"
    path.write_text("CALLS = []\n\n\ndef evaluate(n):\n    CALLS.append(len(n))\n" + textwrap.indent(checks, "    ") + "    return n * 2\n")
    rows = "\nbatches = [pa.RecordBatch.from_arrays([pa.array([0, 1, 2, 3]), pa.array(v)], names=['id', 'n']) for v in ([0, -1, 5, -2], [0, 5, -1, 7])]"
    script = BATCHES.replace("for start in (0, size)]", "for start in (0, size)]" + rows)
    completed = subprocess.run([sys.executable, "-c", script, str(path), "4", "run", "new"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    report = json.loads(completed.stdout)
    assert report["errors"][0] == ["ValueError: zero", "ValueError: negative", None, "ValueError: negative"]
    assert report["errors"][1][0] is None and report["outputs"][1] == [0, 10, None, 14]  # row 0 returned beside row 5


def test_a_row_is_known_again_only_by_exactly_its_values():
    # Each pair differs in one property only: -0.0 and 0.0, NaNs with other bits, NaN and null, in float64 and float32;
    # "" and null; booleans sliced at an offset inside a byte. A row sliced out of a longer batch is the same row; a
    # batch holding a type not keyed here is isolated by calls, as before.
    import math
    import struct

    import numpy as np
    import pyarrow as pa

    from aether_mcp.confined.arrow_batches import _row_keys

    def keys(column: pa.Array) -> list:
        return _row_keys(pa.RecordBatch.from_arrays([pa.array(range(len(column))), column], names=["id", "x"]))

    other_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    values = [0.0, -0.0, math.nan, other_nan, None, 1.5, 1.5]
    doubles = keys(pa.array(values, pa.float64()))
    assert len(set(doubles[:5])) == 5 and doubles[5] == doubles[6]
    assert _row_keys(pa.RecordBatch.from_arrays([pa.array(range(7)), pa.array(values, pa.float64())], names=["id", "x"]).slice(1, 5)) == doubles[1:6]
    singles = np.array([0.0, -0.0, np.nan, np.array([0x7FC00001], np.uint32).view(np.float32)[0], 0.0, 1.5, 1.5], np.float32)
    floats = keys(pa.array(singles, pa.float32(), mask=np.array([0, 0, 0, 0, 1, 0, 0], bool)))
    assert len(set(floats[:5])) == 5 and floats[5] == floats[6]
    assert keys(pa.array(["", None, "", None])) == [("",), (None,), ("",), (None,)]
    flags = pa.array([True, False, None] * 4)
    sliced = _row_keys(pa.RecordBatch.from_arrays([pa.array(range(12)), flags], names=["id", "b"]).slice(3, 7))
    assert sliced == keys(flags)[3:10] == [(True,), (False,), (None,)] * 2 + [(True,)]
    for unkeyed in (pa.array([1], pa.decimal128(5, 2)), pa.array([[1]]), pa.array([0], pa.timestamp("us")), pa.array(["a"]).dictionary_encode()):
        assert keys(unkeyed) is None


def test_what_rows_did_alone_is_kept_up_to_a_size_then_new_rows_are_isolated_by_calls_again(monkeypatch):
    # A bound of a few hundred bytes here stands in for the default's 16 MB, which would take ~100,000 rows to fill.
    import pyarrow as pa

    from aether_mcp.confined import arrow_batches

    monkeypatch.setattr(arrow_batches, "ALONE_BYTES_KEPT", 800)
    batch = pa.RecordBatch.from_arrays([pa.array(range(4)), pa.array(["a", "bb", "c" * 400, "d"])], names=["id", "s"])
    alone = arrow_batches._Alone()
    memo = arrow_batches._Memo(batch, alone)
    assert memo.known(0, 1) is None  # nothing known yet
    for row, outcome in enumerate([None, "ValueError: bad", None, None]):
        memo.record(row, outcome)
    # rows 0, 1 and 3 (under 250 bytes each, as Python holds them) are kept; row 2's 400 characters would pass the bound
    assert alone.outcomes == {("a",): None, ("bb",): "ValueError: bad", ("d",): None} and alone.size <= 800
    # a row called alone before is settled, raised or returned; a part of more rows is always called
    assert memo.known(1, 2) == ["ValueError: bad"] and memo.known(0, 1) == [None] and memo.known(0, 2) is None and memo.known(2, 3) is None


def test_isolated_rows_are_numbered_from_0_as_a_jobs_batches_are(tmp_path):
    # An honest candidate that builds its result on a new index is right on a job's batches, numbered from 0. Isolated
    # parts are numbered from 0 too (before, rows 4-7 here read "evaluate returned 2 values for a batch of 1 rows").
    aligned = _two_batches(tmp_path / "aligned", "if (n == 3).any():\n    raise ValueError('three')\nimport pandas as pd\nreturn pd.Series(n.to_numpy(dtype='int64') * 2, dtype='Int64') + n * 0\n")
    assert aligned["errors"][0] == [None, None, None, "ValueError: three", None, None, None, None] and aligned["outputs"][0] == [0, 2, 4, None, 8, 10, 12, 14]


def test_a_row_that_ran_out_of_memory_alone_is_not_remembered_and_is_called_alone_again():
    # A MemoryError may not come back on the next call: that row is isolated by a call again; the others are settled.
    import pyarrow as pa

    from aether_mcp.confined import arrow_batches

    calls = []

    def evaluate(n):
        calls.append(len(n))
        if len(n) == 1 and (n == 1).any():
            raise MemoryError("out of memory")
        if (n == 2).any():
            raise ValueError("two")
        return n * 2

    batch = pa.RecordBatch.from_arrays([pa.array(range(3)), pa.array([0, 1, 2])], names=["id", "n"])
    alone = arrow_batches._Alone()
    for _ in range(2):
        columns = batch.columns[1:]
        outputs, errors = arrow_batches._evaluate_batch(evaluate, columns, arrow_batches.arguments(columns), pa.int64(), memo=arrow_batches._Memo(batch, alone))
        assert errors.to_pylist() == [None, "MemoryError: out of memory", "ValueError: two"] and outputs.to_pylist() == [0, None, None]
    assert alone.outcomes == {(0,): None, (2,): "ValueError: two"}
    # the first batch: its own call, [0], [1, 2], [1], [2], the row that returns; the second: its own call, [1, 2], [1] again, [0]
    assert calls == [3, 1, 2, 1, 1, 1] + [3, 2, 1, 1]
