"""A candidate runs on a remote cluster (spark://, sc://) only after audit_candidate passed it here, on its current bytes.

A remote master's executors are not confined by this machine, so validate_on_data, run_benchmark and
tune_arrow_batch refuse a candidate whose current bytes have no signed PASS record before anything
starts, and the request that would reach the cluster carries exactly the bytes that passed. The
refusals need no Spark: each one is made once here and asserted refused, with nothing created.
The runs that do reach a standalone cluster and a Spark Connect server after a PASS are in
test_data_validation.py and test_benchmarking.py.
"""

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.processes import confined_child
from aether_mcp.tools import workspaces
from aether_mcp.tools.benchmarking import BENCH_DIR, run_benchmark, tune_arrow_batch
from aether_mcp.tools.cheat_audit import passed_here_for
from aether_mcp.tools.data_validation import VALIDATE_DIR, validate_on_data
from aether_mcp.workspace import Workspace, candidate_results

REMOTE = "spark://127.0.0.1:9"  # never reached: every call below is refused before a Spark application starts
GATE = r"would run candidate 'fee' on executors outside this machine's confinement, so a candidate runs there only after audit_candidate has passed it here"


@pytest.fixture
def fee(root, workspace):
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    (root.path / "data").mkdir()
    pq.write_table(pa.table({"weight": [1.0, 2.5], "express": [True, False]}), root.path / "data" / "parcels.parquet")
    return Workspace.open_intact(root, workspace)


def _record(opened: Workspace, verdict: str) -> None:
    # what audit_candidate records at its end (signed with the server's key, bound to the current digests)
    candidate_results.record(opened, "audits", "fee", {"verdict": verdict, "blocking": 0 if verdict == "PASS" else 1, "comparison_equal": True})


def _nothing_created(opened: Workspace) -> bool:
    return not any(any((opened.state_dir / folder).glob("*")) for folder in (VALIDATE_DIR, BENCH_DIR))


def test_without_a_pass_on_these_bytes_no_remote_run_starts(root, workspace, fee):
    # no audit at all: each remote entry point refuses, naming the tool and the next step
    with pytest.raises(ToolError, match=rf"validate_on_data on {REMOTE} {GATE} on its current bytes \(no audit recorded\)\. Run audit_candidate\(workspace, 'fee'\)"):
        validate_on_data(root, workspace, "fee", "data/parcels.parquet", master=REMOTE)
    # workers=None: the refusal comes before any comparison or Spark application would use them
    with pytest.raises(ToolError, match=rf"run_benchmark on {REMOTE} {GATE}"):
        run_benchmark(root, None, workspace, "fee", master=REMOTE)
    with pytest.raises(ToolError, match=rf"tune_arrow_batch on {REMOTE} {GATE}"):
        tune_arrow_batch(root, None, workspace, "fee", master=REMOTE)
    assert _nothing_created(fee)

    # a PASS of other bytes is stale once the candidate changes
    _record(fee, "PASS")
    assert passed_here_for(fee, "fee", REMOTE, "validate_on_data") == hashlib.sha256((Path(workspace) / "candidate" / "fee.py").read_bytes()).hexdigest()
    with open(Path(workspace) / "candidate" / "fee.py", "a") as changed:
        changed.write("# edited after the audit\n")
    with pytest.raises(ToolError, match=r"\(the latest audit of other bytes was PASS\)"):
        validate_on_data(root, workspace, "fee", "data/parcels.parquet", master=REMOTE)

    # a FAIL on these bytes is no PASS
    _record(fee, "FAIL")
    with pytest.raises(ToolError, match=r"\(its audit on these bytes was FAIL\)"):
        validate_on_data(root, workspace, "fee", "data/parcels.parquet", master="sc://127.0.0.1:9")
    assert _nothing_created(fee)


def test_a_benchmark_master_frozen_in_aether_toml_is_gated_too(root):
    frozen = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee", workspace="on_cluster", benchmark_master=REMOTE).workspace
    (Path(frozen) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    # no master argument: the one aether.toml froze is the one gated
    with pytest.raises(ToolError, match=rf"run_benchmark on {REMOTE} {GATE}"):
        run_benchmark(root, None, frozen, "fee")
    with pytest.raises(ToolError, match=rf"tune_arrow_batch on {REMOTE} {GATE}"):
        tune_arrow_batch(root, None, frozen, "fee")
    # the argument wins over aether.toml: local mode is confined here and needs no audit first
    assert passed_here_for(Workspace.open_intact(root, frozen), "fee", "local[2]", "run_benchmark") is None


def test_local_mode_needs_no_audit_and_the_pinned_bytes_are_the_ones_sent(root, workspace, fee):
    # local mode: every process that runs the candidate is confined here, so nothing is required first
    assert passed_here_for(fee, "fee", "local[*]", "validate_on_data") is None
    _record(fee, "PASS")
    pinned = passed_here_for(fee, "fee", "sc://127.0.0.1:9", "validate_on_data")
    sent = confined_child.sources(fee, "candidate:fee", pinned=pinned)
    assert sent["candidate"]["source"] == VECTORIZED_CANDIDATE
    # the file changes between the gate and the read that builds the request: the request is never built
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE.replace("* 2", "* 3"))
    with pytest.raises(confined_child.ChangedSinceAudit, match="candidate/fee.py changed after the audit that passed it"):
        confined_child.sources(fee, "candidate:fee", pinned=pinned)


def test_the_best_version_timed_beside_the_candidate_on_a_cluster_needs_a_pass_of_its_own_bytes(root, workspace, fee, tmp_path):
    # try_optimization times the best version so far beside the attempt: both reach the cluster's executors
    best = tmp_path / "best"
    (best / "candidate").mkdir(parents=True)
    older = VECTORIZED_CANDIDATE.replace("* 2", "* 2.0")
    (best / "candidate" / "fee.py").write_text(older)
    _record(fee, "PASS")
    pinned = passed_here_for(fee, "fee", REMOTE, "the benchmark")

    def passed(digest):
        return candidate_results.passed_bytes(fee, "fee", digest)

    # the best version's bytes were never audited here: the request is never built
    with pytest.raises(confined_child.ChangedSinceAudit, match="the best version of candidate/fee.py, timed beside it, has no audit here that passed its bytes") as refused:
        confined_child.sources(fee, "candidate:fee", best, pinned=pinned, best_passed=passed)
    assert "run audit_candidate on it" in refused.value.next_step

    # once an audit passed those bytes (as try_optimization's own audit does when it keeps a version), they travel
    current = (Path(workspace) / "candidate" / "fee.py").read_text()
    (Path(workspace) / "candidate" / "fee.py").write_text(older)
    _record(fee, "PASS")
    (Path(workspace) / "candidate" / "fee.py").write_text(current)
    sent = confined_child.sources(fee, "candidate:fee", best, pinned=pinned, best_passed=passed)
    assert sent["best"]["source"] == older and sent["candidate"]["source"] == current

    # a later disproof of those same bytes outweighs the PASS
    (Path(workspace) / "candidate" / "fee.py").write_text(older)
    _record(fee, "FAIL")
    (Path(workspace) / "candidate" / "fee.py").write_text(current)
    with pytest.raises(confined_child.ChangedSinceAudit):
        confined_child.sources(fee, "candidate:fee", best, pinned=pinned, best_passed=passed)
    # local mode pins nothing: the best version travels as it is (every process that runs it is confined here)
    assert confined_child.sources(fee, "candidate:fee", best)["best"]["source"] == older
