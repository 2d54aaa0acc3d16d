"""PySpark's zipped modules compiled once by the server, loaded by the judge's fresh Python daemons: the same code
Python compiles, used only where the archive's source matches, only where the daemon judges, readable by confined
processes and made nowhere they could write (processes/zip_code_cache, confined/python_daemon)."""

import json
import marshal
import os
import subprocess
import sys
import textwrap

import pytest

from aether_mcp.evaluation.spark_session import ZIP_CODE_ENV
from aether_mcp.processes import confinement, zip_code_cache

# A daemon's imports (python_daemon._preload), counted: modules compiled from source out of a zip archive, and
# compiled code loaded; then whether zipimport has its own compiler back.
PRELOAD = textwrap.dedent(
    """
    import json, sys, zipimport
    original = zipimport._compile_source
    seen = {"compiled": [], "loaded": 0}
    def hook(event, args):
        if event == "compile" and ".zip" in str(args[1]):
            seen["compiled"].append(str(args[1]))
        elif event == "marshal.loads":
            seen["loaded"] += 1
    sys.addaudithook(hook)
    from aether_mcp.confined import python_daemon
    python_daemon._preload()
    seen["compiled"] = sorted(set(seen["compiled"]))  # compile raises its event more than once
    seen["compiler restored"] = zipimport._compile_source is original
    print(json.dumps(seen))
    """
)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    try:
        zip_code_cache.ensure(wait_s=60)
        made = os.environ.get(ZIP_CODE_ENV)
        assert made and zip_code_cache.valid(made), list(zip_code_cache.folder().iterdir())
        yield made
    finally:
        os.environ.pop("XDG_CACHE_HOME", None)
        os.environ.pop(ZIP_CODE_ENV, None)


# the reference worker's daemon, which imports what a forked worker would (reference/reference_daemon)
REFERENCE = PRELOAD.replace("from aether_mcp.confined import python_daemon\npython_daemon._preload()", "from aether_mcp.reference import reference_daemon\nreference_daemon.prepare()")


def _preload(code: str | None, judging: bool = True, script: str = PRELOAD) -> dict:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(map(str, zip_code_cache.archives()))}  # as Spark starts a daemon
    if code:
        env[ZIP_CODE_ENV] = code
    if judging:
        env["AETHER_DAEMON_GC_FREEZE"] = "1"
    ended = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr[-2000:]
    return json.loads(ended.stdout.strip().splitlines()[-1])


def test_a_judging_daemon_loads_its_zipped_modules_compiled_and_the_code_is_what_python_compiles(made, tmp_path):
    with open(made, "rb") as file:
        table = marshal.load(file)
    modules = table["modules"]
    assert table["python"] == sys.version and len(modules) > 50 and all(".zip" in path for path in modules)

    unused = _preload(None)  # no compiled code given: every zipped module compiled from source, as before
    assert unused["compiled"] == sorted(modules)
    used = _preload(made)
    assert used["compiled"] == [] and used["loaded"] >= len(modules) and used["compiler restored"]
    assert _preload(made, judging=False)["compiled"] == unused["compiled"]  # a benchmark's daemon starts as a job's
    assert REFERENCE != PRELOAD
    reference = _preload(None, judging=False, script=REFERENCE)
    assert reference["compiled"] and set(reference["compiled"]) <= set(modules)  # pyspark.worker and what it imports
    assert _preload(made, judging=False, script=REFERENCE)["compiled"] == []  # the reference's daemon always judges

    # the same bytes Python compiles from each source in the archive
    check = (
        "import json, marshal, sys, zipfile, zipimport\n"
        "table = marshal.load(open(sys.argv[1], 'rb'))['modules']\n"
        "source = lambda path: zipfile.ZipFile(path.split('.zip/')[0] + '.zip').read(path.split('.zip/')[1])\n"
        "same = [marshal.loads(code) == zipimport._compile_source(path, source(path)) for path, (_, code) in table.items()]\n"
        "print(json.dumps([sum(same), len(same)]))"
    )
    ended = subprocess.run([sys.executable, "-c", check, made], capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr[-2000:]
    assert json.loads(ended.stdout) == [len(modules), len(modules)]

    # a module whose source is not the one compiled is compiled from its source
    one = sorted(modules)[0]
    modules[one] = (b"\0" * 32, modules[one][1])
    altered = tmp_path / "altered.code"
    altered.write_bytes(marshal.dumps(table))
    assert _preload(str(altered))["compiled"] == [one]


def test_only_the_servers_own_file_is_readable_by_confined_processes(made, tmp_path):
    assert os.path.realpath(made) in confinement.read_paths([])
    elsewhere = tmp_path / os.path.basename(made)
    elsewhere.write_bytes(b"")
    assert not zip_code_cache.valid(str(elsewhere)) and not zip_code_cache.valid(None)
    os.environ[ZIP_CODE_ENV] = str(elsewhere)
    try:
        assert str(elsewhere) not in confinement.read_paths([])
    finally:
        os.environ[ZIP_CODE_ENV] = made


def test_a_file_whose_mode_or_owner_was_changed_is_neither_used_by_the_server_nor_loaded_by_a_daemon(made, tmp_path):
    # a confined process may not write the file but may change its mode (Landlock governs contents, not metadata)
    copy = zip_code_cache.folder() / ("pyspark-" + "f" * 16 + ".code")
    copy.write_bytes(open(made, "rb").read())
    try:
        os.chmod(copy, 0o444)
        assert zip_code_cache.valid(str(copy)) and _preload(str(copy))["compiled"] == []
        os.chmod(copy, 0o666)
        assert not zip_code_cache.valid(str(copy))
        assert len(_preload(str(copy))["compiled"]) > 50  # compiled from source, as without it
        if os.geteuid() == 0:  # and a file given to another user (who could then write it), where this user may give it
            os.chmod(copy, 0o444)
            os.chown(copy, 12345, 12345)
            assert not zip_code_cache.valid(str(copy)) and len(_preload(str(copy))["compiled"]) > 50
    finally:
        copy.unlink()


def test_a_worker_start_waits_for_a_make_another_process_has_under_way(tmp_path, monkeypatch):
    import fcntl
    import threading
    import time

    from aether_mcp.processes.made_once import MadeOnce

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    made = MadeOnce("AETHER_TEST_MADE", "test", "made", ".bin", lambda: "0" * 16, lambda partial: ["false"], dict, 10, 1)
    target = made.folder() / f"made-{'0' * 16}.bin"
    made.folder().mkdir(parents=True)
    with open(made.folder() / "make.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process is making it

        def finish():
            time.sleep(1.0)
            target.write_bytes(b"made")
            target.chmod(0o444)
            fcntl.flock(lock, fcntl.LOCK_UN)

        threading.Thread(target=finish).start()
        started = time.monotonic()
        made.ensure(wait_s=10)  # this process's own make finds the lock taken and makes nothing
    assert os.environ.get("AETHER_TEST_MADE") == str(target) and 0.9 < time.monotonic() - started < 10
    monkeypatch.delenv("AETHER_TEST_MADE")
