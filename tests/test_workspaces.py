"""init_workspace and workspace_status: creation, refusals, and tamper detection."""

import tomllib
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import workspaces
from aether_mcp.workspace import Workspace


def test_init_workspace_extracts_freezes_and_snapshots(root):
    created = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee")
    ws = Path(created.workspace)
    assert ws == root.path / "aether_workspaces" / "shipping_fee"
    assert created.udf.return_type == "double"
    assert [(a.name, a.type, a.type_from) for a in created.udf.args] == [("weight", "double", "hint"), ("express", "boolean", "hint")]
    assert created.snapshot_id == 0
    assert created.next_steps[1].startswith("record_cases(workspace, inputs, why)")  # as the specify prompt says, not write_file
    config = tomllib.loads((ws / "aether.toml").read_text())
    assert config["udf"]["function"] == "shipping_fee"
    assert config["spark"]["conf"] == {"spark.sql.session.timeZone": "UTC"}
    original = (ws / "original" / "udf.py").read_text()
    assert "BASE_FEE = 4.99" in original and "SparkSession" not in original and "def main" not in original
    assert {"tests/cases.py", "tests/test_behaviour.py", "candidate/README.md", "README.md"} <= set(created.files)
    assert "def build(weight, express):" in (ws / "candidate" / "README.md").read_text()
    assert Workspace.open(root, created.workspace).integrity().intact


def test_arg_types_override_hints_and_fill_missing_ones(root):
    (root.path / "jobs" / "clean.py").write_text("from pyspark.sql import functions as F\nclean = F.udf(lambda s, n: s[:n], 'string')\n")
    with pytest.raises(ToolError, match=r"types of argument\(s\) s, n are unknown.*arg_types=\{\"s\": \"string\", \"n\": \"int\"\}, guessed from how the UDF uses them \(s is sliced; n is a slice bound\)"):
        workspaces.init_workspace(root, "jobs/clean.py", "clean")
    created = workspaces.init_workspace(root, "jobs/clean.py", "clean", arg_types={"s": "string", "n": "int"})
    assert [(a.name, a.type, a.type_from) for a in created.udf.args] == [("s", "string", "arg_types"), ("n", "int", "arg_types")]


def test_the_arg_types_example_guesses_from_how_the_udf_uses_each_argument(root):
    (root.path / "jobs" / "mixed.py").write_text(
        "import math\nfrom pyspark.sql.functions import udf\n\n\n@udf('double')\n"
        "def score(tier, age, lat, flag, other):\n"
        "    if tier.strip() in ('gold', 'silver') and age >= 65 and flag == True:\n"
        "        return math.radians(lat) * 1.5\n"
        "    return other\n"
    )
    with pytest.raises(ToolError) as raised:
        workspaces.init_workspace(root, "jobs/mixed.py", "score")
    text = str(raised.value)
    assert 'arg_types={"tier": "string", "age": "int", "lat": "double", "flag": "boolean", "other": "?"}' in text
    assert "tier calls .strip; age is compared with 65; lat is passed to math.radians" in text and "other: nothing in the UDF says" in text
    # text a date format or a regular expression reads is a string
    (root.path / "jobs" / "stamps.py").write_text(
        "import re\nfrom datetime import datetime\nfrom pyspark.sql.functions import udf\n\n\n@udf('int')\n"
        "def hour(created_at, note):\n"
        "    return datetime.strptime(created_at, '%Y-%m-%d %H').hour if re.search('ok', note) else None\n"
    )
    with pytest.raises(ToolError, match=r'arg_types=\{"created_at": "string", "note": "string"\}.*created_at is parsed with strptime\(\); note is matched with a regular expression'):
        workspaces.init_workspace(root, "jobs/stamps.py", "hour")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"source": "jobs/missing.py", "udf": "x"}, "source file jobs/missing.py does not exist"),
        ({"source": "../etc/passwd", "udf": "x"}, "contains '..'"),
        ({"source": "/etc/passwd", "udf": "x"}, "outside the server root"),
        ({"source": "jobs/shipping.py", "udf": "nope"}, "UDF 'nope' not found in jobs/shipping.py. UDFs there: shipping_fee"),
        ({"source": "jobs/shipping.py", "udf": "shipping_fee", "arg_types": {"wieght": "double"}}, "arg_types names wieght, which the UDF does not take"),
        ({"source": "jobs/shipping.py", "udf": "shipping_fee", "arg_types": {"weight": "dubble"}}, r"arg_types\['weight'\]: unknown Spark type 'dubble'"),
        ({"source": "jobs/shipping.py", "udf": "shipping_fee", "return_type": "flaot"}, "return_type: unknown Spark type 'flaot'"),
        ({"source": "jobs/shipping.py", "udf": "shipping_fee", "workspace": "."}, "already exists and is not empty"),
    ],
)
def test_init_workspace_refusals(root, kwargs, message):
    with pytest.raises(ToolError, match=message):
        workspaces.init_workspace(root, **kwargs)
    assert not (root.path / "aether_workspaces").exists()


def test_existing_workspace_is_never_overwritten(root):
    first = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee")
    cases = Path(first.workspace) / "tests" / "cases.py"
    cases.write_text("CASES = [1]\n")
    with pytest.raises(ToolError, match="already exists and is not empty; nothing was changed"):
        workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee")
    assert cases.read_text() == "CASES = [1]\n"


def test_status_reports_files_cases_and_pending_gates(workspace, root):
    status = workspaces.workspace_status(root, workspace)
    assert status.integrity.intact
    assert status.cases == 5
    assert status.test_files == ["tests/test_behaviour.py"]
    assert status.candidates == []
    assert status.snapshots == 1
    assert {g.name: g.status for g in status.gates} == {
        "protected_files_intact": "pass",
        "tests_written": "pass",
        "tests_pass_on_original": "pending",
        "branch_coverage": "pending",
        "mutation_score": "pending",
        "tests_frozen": "pending",
        "candidate_equal": "pending",
        "candidate_audited": "pending",
    }
    assert {f.path for f in status.files if f.protected} == {"aether.toml", "original/udf.py"}


def test_edits_behind_the_servers_back_are_detected_and_refused(workspace, root):
    ws = Path(workspace)
    (ws / "original" / "udf.py").write_text("def shipping_fee(weight, express):\n    return 0.0\n")
    (ws / "original" / "extra.py").write_text("")
    status = workspaces.workspace_status(root, workspace)
    assert not status.integrity.intact
    assert status.integrity.modified == ["original/udf.py"] and status.integrity.added == ["original/extra.py"]
    assert "cp .aether/protected/original/udf.py original/udf.py" in status.integrity.recover
    with pytest.raises(ToolError, match=r"edited behind the server's back \(modified: original/udf.py; added: original/extra.py\).*restore the recorded files"):
        Workspace.open_intact(root, workspace)
    # The recovery the message describes works.
    (ws / "original" / "udf.py").write_bytes((ws / ".aether" / "protected" / "original" / "udf.py").read_bytes())
    (ws / "original" / "extra.py").unlink()
    assert Workspace.open_intact(root, workspace).integrity().intact


def test_rewriting_the_manifest_too_is_still_detected(workspace, root):
    ws = Path(workspace)
    (ws / "aether.toml").write_text((ws / "aether.toml").read_text().replace('"double"', '"string"', 1))
    manifest = ws / ".aether" / "protected.json"
    import hashlib
    import json

    data = json.loads(manifest.read_text())
    data["files"]["aether.toml"] = hashlib.sha256((ws / "aether.toml").read_bytes()).hexdigest()
    manifest.write_text(json.dumps(data))
    with pytest.raises(ToolError, match="manifest .aether/protected.json was rewritten outside the server"):
        Workspace.open_intact(root, workspace)


def test_a_folder_that_is_not_a_workspace_is_refused(root):
    with pytest.raises(ToolError, match="is not an aether-mcp workspace .* create one with init_workspace"):
        workspaces.workspace_status(root, "nowhere")


def test_a_deleted_protected_file_is_detected_and_refused(workspace, root):
    ws = Path(workspace)
    (ws / "original" / "udf.py").unlink()
    status = workspaces.workspace_status(root, workspace)
    assert not status.integrity.intact and status.integrity.missing == ["original/udf.py"]
    with pytest.raises(ToolError, match=r"edited behind the server's back \(missing: original/udf.py\)"):
        Workspace.open_intact(root, workspace)
    (ws / "original" / "udf.py").write_bytes((ws / ".aether" / "protected" / "original" / "udf.py").read_bytes())
    assert Workspace.open_intact(root, workspace).integrity().intact


def test_bytecode_beside_the_reference_is_tampering(workspace, root):
    # issue 15, class 6: the loader would have used a planted .pyc; the manifest lists no such file
    ws = Path(workspace)
    cache = ws / "original" / "__pycache__"
    cache.mkdir()
    (cache / "udf.cpython-311.pyc").write_bytes(b"planted")
    status = workspaces.workspace_status(root, workspace)
    assert status.integrity.added == ["original/__pycache__/udf.cpython-311.pyc"]
    with pytest.raises(ToolError, match="added: original/__pycache__/udf.cpython-311.pyc"):
        Workspace.open_intact(root, workspace).verified_original()
