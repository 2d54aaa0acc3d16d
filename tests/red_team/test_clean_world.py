"""Red team, class 7 (it rewrites the judge for the next candidate): a correct candidate that, while it runs,
replaces the harness function that loads candidates, so that a later, wrong candidate would be run as the first
one's code and judged equal.

Caught by: a clean world for every candidate. A sql candidate's build() runs in a throwaway process
(aether_mcp.confined.sql_build) and only its expression comes back to the candidate worker; before a request for
another candidate, the candidate worker ends every Spark Python worker and their daemon, so vectorized and kernel
candidates never share a Python process with another candidate. Whatever a candidate patches dies with its
process, so each later candidate is judged on its own code. A process a candidate's worker started outside the
daemon's reach (a session of its own) ends at the switch too: every process in the worker's PID namespace but the
worker and its JVM is killed (aether_mcp.confined.leftovers).
"""

import os
import signal
import textwrap

import pytest
from conftest import SQL_CANDIDATE, VECTORIZED_CANDIDATE

from aether_mcp.tools import files
from aether_mcp.tools.byte_compare import byte_compare

pytestmark = pytest.mark.slow

# The patch, reached through an allowed module's attributes: every later candidate load in this process
# returns the patcher's own module (so its code runs under the later candidate's name).
PATCH = textwrap.dedent(
    """
    import calendar as _reach
    _self = _reach.sys.modules[__name__]
    for _module, _name, _value in (
        ("aether_mcp.confined.arrow_batches", "candidate_module", lambda *args, **kwargs: _self),
        ("aether_mcp.evaluation.source_modules", "module_from_source", lambda *args, **kwargs: _self),
        ("aether_mcp.confined.candidate_targets", "module_from_source", lambda *args, **kwargs: _self),
    ):
        if _module in _reach.sys.modules:
            setattr(_reach.sys.modules[_module], _name, _value)
    """
).strip()


def patched(source: str, entry: str) -> str:
    return source.replace(entry, entry + textwrap.indent(PATCH, "    ") + "\n")


# Wrong on every express parcel: triple instead of double.
WRONG_SQL = SQL_CANDIDATE.replace("checked * 2", "checked * 3")
WRONG_VECTORIZED = VECTORIZED_CANDIDATE.replace("fee * 2", "fee * 3")


def test_a_candidate_that_patches_the_harness_cannot_reach_the_next_candidates_judgement(root, workspace, workers):
    sources = {
        "patch_sql": patched(SQL_CANDIDATE, "def build(weight, express):\n"),
        "patch_vectorized": patched(VECTORIZED_CANDIDATE, "def evaluate(weight, express):\n"),
        "wrong_sql": WRONG_SQL,
        "wrong_vectorized": WRONG_VECTORIZED,
    }
    for name, source in sources.items():
        files.write_file(root, workspace, f"candidate/{name}.py", source)
    for patcher in ("patch_sql", "patch_vectorized"):
        # the patcher is right, so it is equal on its own; its patch ran where it ran
        own = byte_compare(root, workers, workspace, patcher)
        assert own.equal, (patcher, own.error, own.mismatches[:2])
        for victim in ("wrong_sql", "wrong_vectorized"):
            judged = byte_compare(root, workers, workspace, victim)
            assert judged.error is None, (patcher, victim, judged.error)
            assert not judged.equal, f"{victim} was judged as {patcher}'s code after {patcher} ran"
            assert judged.mismatch_kinds and judged.rows_compared > 1000, (patcher, victim, judged.rows_compared)


# The watch's known gap, used to leave a process behind: a finalizer the harness's own gc.collect() runs has no
# candidate frame on the stack, so what it starts is not refused. It starts `sleep` in a session of its own, out of
# reach of the SIGHUP a daemon sends its process group as it ends.
LEAVES_A_PROCESS = """

import os
import weakref


class _Cycle:
    pass


def _leave_a_process():
    cycle = _Cycle()
    cycle.me = cycle
    weakref.finalize(cycle, os.posix_spawn, "/bin/sleep", ["sleep", "613.25"], dict(os.environ), setsid=True)
"""


def test_a_process_a_candidate_leaves_behind_ends_before_the_next_candidate_runs(root, workspace, workers):
    leaving = VECTORIZED_CANDIDATE.replace("def evaluate(weight, express):\n", "def evaluate(weight, express):\n    _leave_a_process()\n") + LEAVES_A_PROCESS
    files.write_file(root, workspace, "candidate/leaves.py", leaving)
    files.write_file(root, workspace, "candidate/next_one.py", VECTORIZED_CANDIDATE)
    try:
        assert byte_compare(root, workers, workspace, "leaves", hidden_rows=0).equal
        assert _left(), "the candidate left no process: if the watch now refuses this route, leave one another way"
        assert byte_compare(root, workers, workspace, "next_one", hidden_rows=0).equal
        assert not _left(), "a process the last candidate left was still running while the next one was judged"
    finally:
        for pid in _left():
            os.kill(pid, signal.SIGKILL)


def _left() -> list[int]:
    """The processes LEAVES_A_PROCESS started, still running (this test sees every PID namespace's from outside)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            command = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if command[:2] == [b"sleep", b"613.25"] and state != "Z":
            found.append(int(entry))
    return found
