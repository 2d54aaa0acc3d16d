"""What the judging workers' Python daemons do once before any worker forks (evaluation/daemon_start,
reference/reference_daemon): each forked worker must start from the sys.path, the modules and the command line a
job's worker has, and only skip the work it would have repeated."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from aether_mcp.evaluation import daemon_start
from aether_mcp.processes import zip_code_cache

# A Python worker's start as PySpark's daemon and worker do it (daemon.py imports the worker module after the fork;
# worker.py's first task calls worker_util.setup_spark_files), after `daemon` ran in the daemon: what it then sees.
WORKER = textwrap.dedent(
    """
    import importlib, json, runpy, sys  # both daemons start as `python -m`, through runpy
    {daemon}
    invalidated = []
    original = importlib.invalidate_caches
    importlib.invalidate_caches = lambda: invalidated.append(1) or original()
    importlib.import_module("pyspark.worker")
    from pyspark import worker_util
    worker_util.setup_spark_files({folder!r}, [])
    print(json.dumps({{"path": sys.path, "modules": sorted(sys.modules), "invalidated": len(invalidated)}}))
    """
)
# a job's daemon: `python -m pyspark.daemon`, its module run as __main__ (here without starting its loop)
JOB_DAEMON = "runpy.run_module('pyspark.daemon', run_name='daemon_main')"
REFERENCE_DAEMON = "from aether_mcp.reference import reference_daemon; reference_daemon.prepare()"


def _run(script: str, folder: str | None) -> str:
    # as Spark starts a daemon: PySpark's zip archives first on the path, the application's folder named where we set it
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(map(str, zip_code_cache.archives()))}
    if folder is not None:
        env[daemon_start.SPARK_FILES_ENV] = folder
    ended = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr[-2000:]
    return ended.stdout.strip().splitlines()[-1]


def _worker(daemon: str, folder: str, told: bool) -> dict:
    return json.loads(_run(WORKER.format(daemon=daemon, folder=folder), folder if told else None))


def test_a_reference_worker_starts_with_a_jobs_path_and_modules_and_skips_the_cache_invalidation(tmp_path):
    folder = str(tmp_path / "userFiles-1b")  # as Spark makes it: this user's, writable by no one else
    os.mkdir(folder, 0o755)
    job = _worker(JOB_DAEMON, folder, told=False)
    ours = _worker(REFERENCE_DAEMON, folder, told=True)
    assert job["path"].count(folder) == 1 and job["path"][1] == folder  # where PySpark's worker puts it
    assert ours["path"] == job["path"]
    # the worker's modules are all there, and nothing else but the daemon's own
    assert set(job["modules"]) <= set(ours["modules"])
    assert {m for m in set(ours["modules"]) - set(job["modules"]) if m != "pyspark.daemon" and not m.startswith("aether_mcp")} == set()
    assert job["invalidated"] == 1 and ours["invalidated"] == 0  # each forked worker re-read PySpark's zip directory


@pytest.mark.parametrize("made", ["by_spark", "group_writable", "missing"])
def test_only_a_folder_spark_made_for_this_user_goes_on_the_path_and_the_variable_goes_away(tmp_path, made):
    folder = tmp_path / "userFiles-1b"
    if made != "missing":
        os.mkdir(folder)
        os.chmod(folder, 0o775 if made == "group_writable" else 0o755)
    script = f"import os, sys; from aether_mcp.reference import reference_daemon; n = len(sys.path); reference_daemon.prepare(); print(os.environ.get({daemon_start.SPARK_FILES_ENV!r}), len(sys.path) - n, sys.path.index({str(folder)!r}) if {str(folder)!r} in sys.path else -1)"
    added, where = (1, 1) if made == "by_spark" else (0, -1)  # else the worker adds it itself, as in a job
    assert _run(script, str(folder)).split() == ["None", str(added), str(where)]


@pytest.mark.parametrize(
    "module, renames",
    [
        ("aether_mcp.reference.reference_daemon", "d.prepare()"),  # the original's workers
        ("aether_mcp.confined.python_daemon", "from aether_mcp.confined import job_environment; job_environment.as_in_a_job()"),  # before a candidate loads
    ],
)
def test_each_judging_daemon_is_named_as_pysparks_own_in_its_workers(module, renames):
    script = (
        f"import importlib, json, sys; d = importlib.import_module({module!r})\n"
        f"sys.argv[0] = d.__file__; sys.orig_argv[:] = [sys.executable, '-m', {module!r}]  # as `python -m` starts it\n"
        f"{renames}; import pyspark.daemon; print(json.dumps([sys.argv[0] == pyspark.daemon.__file__, sys.orig_argv[1:]]))"
    )
    assert json.loads(_run(script, None)) == [True, ["-m", "pyspark.daemon"]]


def test_daemons_are_told_the_folder_only_where_the_executors_share_the_drivers():
    assert daemon_start.local_master("local") and daemon_start.local_master("local[2]") and daemon_start.local_master("local[*,3]")
    for master in ("local-cluster[2,1,1024]", "spark://127.0.0.1:7077", "yarn", "k8s://https://host"):
        assert not daemon_start.local_master(master)
        daemon_start.tell_daemons(None, master)  # returns before it touches a session (None has no conf to read)


def test_the_reference_uses_its_daemon_only_where_a_job_would_use_pysparks_own_here():
    from aether_mcp.reference.reference_worker import REFERENCE_DAEMON, ReferenceWorker

    ours = ReferenceWorker("local[2]", {"spark.sql.shuffle.partitions": "4"})
    assert ours.session_conf()["spark.python.daemon.module"] == REFERENCE_DAEMON and ours.own_daemon()
    for master, conf in [
        ("spark://127.0.0.1:7077", {}),  # executors elsewhere need not have aether-mcp installed
        ("local[2]", {"spark.python.use.daemon": "false"}),  # the job starts each worker without a daemon
        ("local[2]", {"spark.python.daemon.module": "my_daemon"}),  # the job's own daemon
    ]:
        worker = ReferenceWorker(master, conf)
        assert worker.session_conf() == conf and not worker.own_daemon(), (master, conf)
