"""The judge's seeds: secret from the agent, recorded in the server's own state folder, pinnable to replay a draw."""

import json
from pathlib import Path

import pytest
from conftest import SQL_CANDIDATE

from aether_mcp import draws
from aether_mcp.tools import files
from aether_mcp.tools.byte_compare import byte_compare

# Right on every case, wrong on hidden rows above 100 kg: which rows are wrong depends on the draw.
HEAVY_WRONG = SQL_CANDIDATE.replace("return F.when(weight.isNull()", "fee_out = F.when(weight.isNull()").rstrip() + (
    "\n    return F.when(weight > 100.0, fee_out + 0.01).otherwise(fee_out)\n"
)


def test_each_seed_is_recorded_with_its_call_outside_every_workspace_and_a_pin_replays_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AETHER_MCP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv(draws.PIN_VARIABLE, raising=False)
    with draws.call("byte_compare", "/root/ws") as call_id:
        hidden = draws.seed("byte_compare.hidden")
        with draws.call("audit_candidate", "/root/other"):  # a call inside a call is the outer call's
            top_up = draws.seed("byte_compare.top_up")
        top_up_again = draws.seed("byte_compare.top_up")
    entries = draws.recorded(call_id)
    assert [(e["name"], e["seed"], e["tool"], e["workspace"], e["pinned"]) for e in entries] == [
        ("byte_compare.hidden", hidden, "byte_compare", "/root/ws", False),
        ("byte_compare.top_up", top_up, "byte_compare", "/root/ws", False),
        ("byte_compare.top_up#2", top_up_again, "byte_compare", "/root/ws", False),
    ]
    assert Path(draws.record_path()).parent == tmp_path / "state" / "draws"
    with draws.call("byte_compare", "/root/ws") as second:
        assert draws.seed("byte_compare.hidden") != hidden  # drawn fresh (64 bits)
    assert second != call_id and len(draws.recorded()) >= 4

    # the seeds of a call, given back, are drawn again; names not given are fresh, and the record says which were pinned
    monkeypatch.setenv(draws.PIN_VARIABLE, json.dumps({e["name"]: e["seed"] for e in entries if e["name"] != "byte_compare.top_up"}))
    with draws.call("byte_compare", "/root/ws") as replay:
        assert draws.seed("byte_compare.hidden") == hidden
        draws.seed("byte_compare.top_up")
        assert draws.seed("byte_compare.top_up") == top_up_again
    assert [e["pinned"] for e in draws.recorded(replay)] == [True, False, True]

    # a record that cannot be written does not stop the judge: the seed is drawn, and the server's log says so
    (tmp_path / "blocked").write_text("a file where the state folder should be")
    monkeypatch.setenv("AETHER_MCP_STATE_DIR", str(tmp_path / "blocked"))
    monkeypatch.delenv(draws.PIN_VARIABLE)
    assert draws.seed("byte_compare.hidden") >= 0
    assert "the seed byte_compare.hidden of byte_compare could not be recorded" in capsys.readouterr().err

    # a pin that cannot be read is refused with what to give instead, never silently ignored
    monkeypatch.setenv(draws.PIN_VARIABLE, "{hidden: 1")
    with pytest.raises(ValueError, match="AETHER_MCP_SEEDS is not JSON .*give an object from seed name to integer"):
        draws.seed("byte_compare.hidden")
    monkeypatch.setenv(draws.PIN_VARIABLE, '{"byte_compare.hidden": -1}')
    with pytest.raises(ValueError, match="must be a JSON object from seed name to a non-negative integer"):
        draws.seed("byte_compare.hidden")


def test_a_failing_comparison_is_replayed_from_the_seeds_recorded_for_it(root, workspace, workers, monkeypatch):
    monkeypatch.delenv(draws.PIN_VARIABLE, raising=False)
    files.write_file(root, workspace, "candidate/heavy.py", HEAVY_WRONG)
    first = byte_compare(root, workers, workspace, "heavy", hidden_rows=1000)
    assert first.equal is False and first.mismatches, first.error
    (call_id,) = {e["call"] for e in draws.recorded() if e["tool"] == "byte_compare" and e["workspace"] == workspace}
    seeds = {e["name"]: e["seed"] for e in draws.recorded(call_id)}
    assert {"byte_compare.hidden", "byte_compare.layout"} <= set(seeds)
    # the seeds are the server's: no file of the workspace holds one
    written = b"".join(p.read_bytes() for p in Path(workspace).rglob("*") if p.is_file())
    assert not any(str(seed).encode() in written for seed in seeds.values())

    monkeypatch.setenv(draws.PIN_VARIABLE, json.dumps(seeds))
    replayed = byte_compare(root, workers, workspace, "heavy", hidden_rows=1000)
    assert [(m.source, m.args, m.expected, m.actual) for m in replayed.mismatches] == [(m.source, m.args, m.expected, m.actual) for m in first.mismatches]
    assert [s.model_dump() for s in replayed.sources] == [s.model_dump() for s in first.sources]
    monkeypatch.delenv(draws.PIN_VARIABLE)
    fresh = byte_compare(root, workers, workspace, "heavy", hidden_rows=1000)
    assert [m.args for m in fresh.mismatches if m.source == "hidden"] != [m.args for m in first.mismatches if m.source == "hidden"]
