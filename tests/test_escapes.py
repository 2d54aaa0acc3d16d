"""Issue 15: what a candidate could do through write_file + byte_compare/audit_candidate alone, and why it no longer works.

Each cheat here catches the watch's refusal and carries on, returning the right values, so the
comparison alone would call it equal: what stops it is confinement (nothing changes on disk,
nothing appears outside the root, the server's state is out of sight) and the watch's events,
which fail the audit as dynamic findings at the candidate's own file and line.
"""

import hashlib
import secrets
import textwrap
from pathlib import Path

import pytest
from conftest import VECTORIZED_CANDIDATE

from aether_mcp.tools import files
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.workspace import Workspace

pytestmark = pytest.mark.slow

# the evaluate body of the honest shipping candidate the other suites use
HONEST_BODY = VECTORIZED_CANDIDATE.split("def evaluate(weight, express):\n", 1)[1]


def cheat(prelude: str) -> str:
    """A correct shipping_fee candidate that first runs `prelude` (inside evaluate), swallowing any refusal."""
    attempt = textwrap.indent(textwrap.dedent(prelude).strip(), "        ")
    return (
        "import os\n\nimport numpy as np\nimport pandas as pd\n\nTARGET = 'vectorized'\n\n\n"
        f"def evaluate(weight, express):\n    try:\n{attempt}\n    except Exception:\n        pass\n{HONEST_BODY}"
    )


REPORT_WEIGHT = 3.25  # the case row on which an attempts candidate reports what each attempt did


def attempts(*steps: str) -> str:
    """A correct shipping_fee candidate that makes each step in a `try` of its own, so a refusal stops only that step,
    and raises what each did (`0:done`, `1:PermissionError`...) on the case row of weight REPORT_WEIGHT."""
    tries = "".join(
        f"    try:\n{textwrap.indent(textwrap.dedent(step).strip(), '        ')}\n        done.append('{i}:done')\n"
        f"    except Exception as exc:\n        done.append('{i}:' + type(exc).__name__)\n"
        for i, step in enumerate(steps)
    )
    report = f"    if bool((weight == {REPORT_WEIGHT}).any()):\n        raise ValueError('|'.join(done))\n"
    return (
        "import os\n\nimport numpy as np\nimport pandas as pd\n\nTARGET = 'vectorized'\n\n\n"
        f"def evaluate(weight, express):\n    done = []\n{tries}{report}{HONEST_BODY}"
    )


def reported(root, workers, workspace, name: str) -> list[str]:
    """What each attempt of candidate `name` did, from a byte_compare on the report case alone."""
    (Path(workspace) / "tests" / "cases.py").write_text(f'CASES = [{{"args": [{REPORT_WEIGHT}, False], "expected": 6.865, "why": "the row the candidate reports on"}}]\n')
    compared = byte_compare(root, workers, workspace, name, hidden_rows=0)
    [shown] = [m.actual for m in compared.mismatches if m.source == "tests"]
    return shown.split("ValueError: ", 1)[1].split("|")


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def dynamic(result, rule: str) -> list:
    return [f for f in result.findings if f.check == "dynamic" and f.rule == rule and f.severity == "block"]


def test_a_candidate_cannot_rewrite_the_reference_or_re_sign_it(root, workspace, workers):
    # class 1: from a Spark Python worker, rewrite original/udf.py and .aether/protected/, then re-sign the manifest
    # with the key from the server's state folder (whose path it once found in the environment); one try per attempt
    from aether_mcp.workspace import state_home

    ws = Path(workspace)
    key_path = Path(state_home()) / "manifest.key"
    assert key_path.is_file()
    steps = [
        'open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "original", "udf.py"), "w").write("def shipping_fee(weight, express):\\n    return 4.99\\n")',
        'open(os.path.join(os.path.dirname(os.path.dirname(__file__)), ".aether", "protected", "original", "udf.py"), "w").write("tampered")',
        "assert os.environ.get('AETHER_MCP_STATE_DIR') is not None",
        f"open({str(key_path)!r}, 'rb').read()",
        'open(os.path.join(os.path.dirname(os.path.dirname(__file__)), ".aether", "protected.json"), "w").write("00")',
    ]
    files.write_file(root, workspace, "candidate/resign.py", attempts(*steps))
    original, state = digests(ws / "original"), digests(ws / ".aether" / "protected")
    manifest = (ws / ".aether" / "protected.json").read_bytes()

    # every attempt was made, and each was refused: the writes and the key's read by the kernel or the watch, and the
    # state folder's variable is not in the environment at all
    outcomes = reported(root, workers, workspace, "resign")
    assert [o.split(":")[0] for o in outcomes] == ["0", "1", "2", "3", "4"], outcomes
    assert outcomes[2] == "2:AssertionError" and all(o.split(":")[1] in ("PermissionError", "WatchRefused") for o in outcomes[:2] + outcomes[3:]), outcomes
    # audited at small sizes: the findings asserted are the watch's events at the candidate's line, which any size
    # shows (the job-batch run that larger sizes add is test_wrong_only_above_the_drawn_batch_sizes_...)
    audit = audit_candidate(root, workers, workspace, "resign", hidden_rows_count=1000, watched_rows=(250, 1000))
    assert audit.verdict == "FAIL" and audit.confined
    tampering = dynamic(audit, "tampering")
    assert tampering and tampering[0].file == "candidate/resign.py" and tampering[0].line is not None
    # nothing changed, and the workspace is still the one the server made
    assert digests(ws / "original") == original and digests(ws / ".aether" / "protected") == state
    assert (ws / ".aether" / "protected.json").read_bytes() == manifest
    assert Workspace.open_intact(root, workspace).integrity().intact


def test_the_servers_state_is_out_of_sight_of_candidate_code(root, workspace, workers):
    # class 1: the key's folder came through the environment; now neither it nor any home is there
    source = cheat(
        """
        seen = f"state={os.environ.get('AETHER_MCP_STATE_DIR')!r} home={os.environ.get('HOME')!r}"
        if bool((weight == 3.25).any()):  # wherever the batch layout puts the case's row
            raise ValueError(seen)
        """
    ).replace("    except Exception:\n        pass\n", "    except ValueError:\n        raise\n    except Exception:\n        pass\n")
    files.write_file(root, workspace, "candidate/snoop.py", source)
    (Path(workspace) / "tests" / "cases.py").write_text('CASES = [{"args": [3.25, False], "expected": 6.865, "why": "a row the candidate reports on"}]\n')
    compared = byte_compare(root, workers, workspace, "snoop", hidden_rows=0)
    [shown] = [m.actual for m in compared.mismatches if m.source == "tests"]
    # HOME is the worker's own scratch, a plain temporary folder that names nothing of the harness
    assert "state=None" in shown and "home='/" in shown and "aether" not in shown, shown


def test_candidate_code_writes_nothing_outside_the_root_and_keeps_no_state_across_calls(root, workspace, workers):
    # class 3: a file under /tmp, or in the worker's scratch, kept state from one call to the next; one try per attempt
    marker = f"/tmp/aether-escape-{secrets.token_hex(4)}"
    writer = attempts(
        f"open({marker!r}, 'w').write('escaped')",
        "open(os.path.join(os.environ['TMPDIR'], 'seen-before'), 'w').write('1')",
        "open(os.path.join(os.environ['HOME'], 'seen-before'), 'w').write('1')",
    )
    reader = attempts(
        "assert not os.path.exists(os.path.join(os.environ['TMPDIR'], 'seen-before'))",
        "assert not os.path.exists(os.path.join(os.environ['HOME'], 'seen-before'))",
    )
    files.write_file(root, workspace, "candidate/stateful.py", writer)
    # /tmp is refused (by the watch, or the kernel beneath it); the call's own scratch (TMPDIR, HOME) may be written
    outcomes = reported(root, workers, workspace, "stateful")
    assert outcomes[0] in ("0:WatchRefused", "0:PermissionError") and outcomes[1:] == ["1:done", "2:done"], outcomes
    assert not Path(marker).exists()
    files.write_file(root, workspace, "candidate/stateful.py", reader)
    # the next call starts from an empty scratch: what the last one wrote there is gone
    assert reported(root, workers, workspace, "stateful") == ["0:done", "1:done"]


def test_a_watched_run_that_behaves_differently_is_a_mismatch(root, workspace, workers):
    # class 2: sys.gettrace() tells the watched run apart; its outputs are compared now
    source = VECTORIZED_CANDIDATE.replace("import numpy", "import sys\n\nimport numpy").replace(
        "    return pd.Series(", "    if sys.gettrace() is not None:\n        fee = fee * 0.0\n    return pd.Series("
    )
    assert "sys.gettrace()" in source
    files.write_file(root, workspace, "candidate/two_faced.py", source)
    # small sizes: a watched run that differs shows at any size; the job-batch run larger sizes add is the next test's
    audit = audit_candidate(root, workers, workspace, "two_faced", hidden_rows_count=1000, watched_rows=(250, 1000))
    assert audit.comparison.equal and audit.verdict == "FAIL"
    assert dynamic(audit, "watch_dependent") and audit.watched_rows_compared > 0


DOUBLING_JOB = """
from pyspark.sql.functions import udf


@udf("double")
def double_it(x: float) -> float:
    return None if x is None else x * 2.0
"""


def test_wrong_only_above_the_drawn_batch_sizes_is_caught_at_the_jobs_batch_size(root, workers):
    # issue 15: zeros for batches over 1,000 rows passed when the draw picked batches of 256
    from aether_mcp.tools import workspaces

    (root.path / "jobs" / "doubling.py").write_text(DOUBLING_JOB)
    ws = workspaces.init_workspace(root, "jobs/doubling.py", "double_it").workspace
    (Path(ws) / "tests" / "cases.py").write_text('CASES = [{"args": [1.5], "expected": 3.0, "why": "doubles"}]\n')
    source = """
import numpy as np
import pandas as pd

TARGET = 'vectorized'


def evaluate(x):
    values = x.to_numpy(dtype="float64", na_value=0.0) * 2.0
    if len(x) > 1000:
        values = values * 0.0
    return pd.Series(pd.arrays.FloatingArray(values, x.isna().to_numpy()))
"""
    files.write_file(root, ws, "candidate/big_batches.py", source)
    audit = audit_candidate(root, workers, ws, "big_batches", hidden_rows_count=1000, watched_rows=(250, 12_000))
    assert audit.comparison.equal and audit.verdict == "FAIL"  # the comparison's batches never exceed 1000 rows
    assert "Arrow batches of 12001" in " ".join(f.evidence for f in dynamic(audit, "watch_dependent"))
    assert "run at the job's batch size 'job' (12000 rows, Arrow batches of 10000)" in " ".join(f.evidence for f in dynamic(audit, "batch_dependent"))
