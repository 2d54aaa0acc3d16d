"""Spark's classes in one archive that every JVM the server starts maps, confined ones included."""

import os
from pathlib import Path

import pytest
from conftest import SQL_CANDIDATE

from aether_mcp.evaluation import spark_session
from aether_mcp.processes import class_archive, confinement
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tools import files
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.workspace import Workspace


def _java_processes() -> dict[int, str]:
    """Java processes below this test process, with the files each has mapped."""
    found = {}
    me = os.getpid()
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor != me:
            ancestor = parents.get(ancestor)
        try:
            if ancestor == me and Path(os.readlink(f"/proc/{pid}/exe")).name == "java":
                found[pid] = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
    return found


def test_a_switched_off_archive_is_never_used_and_only_an_archive_the_server_made_is_readable_when_confined(monkeypatch, tmp_path):
    monkeypatch.setenv(class_archive.SWITCH_ENV, "0")
    monkeypatch.setenv(spark_session.CLASS_ARCHIVE_ENV, str(tmp_path / "stale.jsa"))
    assert class_archive.ensure() is None and spark_session.CLASS_ARCHIVE_ENV not in os.environ
    # this installation has Java and Spark's jars, so it has an archive name
    assert len(class_archive.key() or "") == 16
    # a path in the variable that is not one of the server's archives grants confined processes nothing (a stale
    # value naming a home folder's file would otherwise open that folder, and a state folder inside it)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = class_archive.folder() / f"spark-{'0' * 16}.jsa"
    made.parent.mkdir(parents=True)
    made.write_bytes(b"archive")
    elsewhere = tmp_path / f"spark-{'0' * 16}.jsa"
    elsewhere.write_bytes(b"archive")
    spaced = tmp_path / "a b" / "aether-mcp" / "jvm"
    for path, granted in [(made, True), (elsewhere, False), (made.with_name("spark-x.jsa"), False), (tmp_path, False), (spaced / made.name, False)]:
        monkeypatch.setenv(spark_session.CLASS_ARCHIVE_ENV, str(path))
        assert (str(made) in confinement.read_paths([])) is granted and class_archive.valid(str(path)) is granted, path


@pytest.mark.slow
def test_workers_started_once_the_archive_exists_map_it_the_confined_candidate_worker_too(root, workspace):
    making = class_archive.ensure()
    if making is not None:
        making.join(class_archive.MAKE_TIMEOUT_S)
        class_archive.ensure()  # as a worker's start does: the archive made since is used from now on
    archive = os.environ.get(spark_session.CLASS_ARCHIVE_ENV)
    assert archive and Path(archive).is_file(), f"no archive was made; see {class_archive.folder()}"
    assert Path(archive).parent == class_archive.folder() and Path(archive).stat().st_mode & 0o777 == 0o444  # kept read-only
    before = set(_java_processes())
    pool = WorkerPool()
    try:
        files.write_file(root, workspace, "candidate/fee.py", SQL_CANDIDATE)
        assert byte_compare(root, pool, workspace, "fee", hidden_rows=200).equal
        started = {pid: maps for pid, maps in _java_processes().items() if pid not in before}
        assert len(started) == 2, started.keys()  # the reference worker's JVM and the candidate worker's
        assert all(archive in maps for maps in started.values())
        assert pool.get("candidate", Workspace.open(root, workspace).config.spark).confinement.confined
    finally:
        pool.close()
