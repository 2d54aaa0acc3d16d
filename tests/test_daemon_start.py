"""What the judging workers' Python daemons do once before any worker forks (evaluation/daemon_start,
reference/reference_daemon): each forked worker must start from the sys.path and the modules a job's worker has,
and only skip the work it would have repeated."""

import json
import os
import subprocess
import sys
import textwrap

from aether_mcp.processes import zip_code_cache

FOLDER = "/tmp/spark-0a/userFiles-1b"  # as SparkFiles.getRootDirectory() names it

# A Python worker's start as PySpark's daemon and worker do it (daemon.py imports the worker module after the fork;
# worker.py's first task calls worker_util.setup_spark_files), after `DAEMON` ran in the daemon: what it then sees.
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
JOB_DAEMON = "import runpy; runpy.run_module('pyspark.daemon', run_name='daemon_main')"
REFERENCE_DAEMON = "from aether_mcp.reference import reference_daemon; reference_daemon.prepare()"


def _worker(daemon: str, files_env: bool) -> dict:
    # as Spark starts a daemon: PySpark's zip archives first on the path, the application's folder named where we set it
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(map(str, zip_code_cache.archives()))}
    if files_env:
        env["AETHER_SPARK_FILES"] = FOLDER
    ended = subprocess.run([sys.executable, "-c", WORKER.format(daemon=daemon, folder=FOLDER)], env=env, capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr[-2000:]
    return json.loads(ended.stdout.strip().splitlines()[-1])


def test_a_reference_worker_starts_with_a_jobs_path_and_modules_and_skips_the_cache_invalidation():
    job = _worker(JOB_DAEMON, files_env=False)
    ours = _worker(REFERENCE_DAEMON, files_env=True)
    assert job["path"].count(FOLDER) == 1 and job["path"][1] == FOLDER  # where PySpark's worker puts it
    assert ours["path"] == job["path"]
    # the worker's modules are all there, and nothing else but the daemon's own
    assert set(job["modules"]) <= set(ours["modules"])
    assert {m for m in set(ours["modules"]) - set(job["modules"]) if m != "pyspark.daemon" and not m.startswith("aether_mcp")} == set()
    assert job["invalidated"] == 1 and ours["invalidated"] == 0  # each forked worker re-read PySpark's zip directory


def test_the_folder_is_taken_out_of_the_daemons_environment_and_goes_only_where_the_worker_puts_it():
    script = "import os, sys; from aether_mcp.reference import reference_daemon; before = list(sys.path); reference_daemon.prepare(); print(os.environ.get('AETHER_SPARK_FILES'), sys.path.index({folder!r}), len(sys.path) - len(before))"
    env = {"PATH": os.environ["PATH"], "AETHER_SPARK_FILES": FOLDER}
    ended = subprocess.run([sys.executable, "-c", script.format(folder=FOLDER)], env=env, capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0, ended.stderr[-2000:]
    assert ended.stdout.split() == ["None", "1", "1"]
    # without it (a daemon started before the worker set it), nothing is added and the worker adds it itself
    ended = subprocess.run([sys.executable, "-c", "import sys; from aether_mcp.reference import reference_daemon; n = len(sys.path); reference_daemon.prepare(); print(len(sys.path) - n)"], env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0 and ended.stdout.split() == ["0"], ended.stderr[-2000:]
