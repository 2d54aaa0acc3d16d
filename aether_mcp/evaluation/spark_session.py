"""Create the SparkSession a worker keeps warm: local mode, the workspace's confs, quiet logs."""

from __future__ import annotations

import os
import sys

# Harness settings that change nothing a UDF computes, only how quietly and quickly Spark runs.
HARNESS_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


# A worker's JVM runs many short jobs on new code: the quick compiler alone made a first byte_compare
# after warm-up 2.9 s instead of 4.2 s and warm ones 1.9 s instead of 2.4 s on 2 cores. The benchmark
# application keeps the optimizing compiler, since it times long runs at full speed (unless TIMED_JIT_ENV says quick).
QUICK_JIT = "-XX:TieredStopAtLevel=1"
# "quick" in the server's environment: the timed applications (the benchmark's, validate_on_data's) on a local
# master compile with the quick compiler too. Each then starts faster and costs much less CPU, while JVM-side work
# (a sql candidate, the no-UDF floor) runs slower than in a long job: for short runs on small machines, and test
# suites. Their results name the compiler the timing JVM ran with (`jvm_compiler`), and their texts say quick.
TIMED_JIT_ENV = "AETHER_MCP_BENCH_JIT"
COMPILER_NOTE = (
    "the compiler the JVM that timed the runs used, read from it: optimizing (as a long job's), or quick (C1 only: the server's"
    " AETHER_MCP_BENCH_JIT=quick, or the Spark installation's own settings; JVM-side work such as a sql candidate or the no-UDF floor"
    " then ran slower than in a long job), or interpreted; null on a cluster or through Spark Connect, whose executors' JVMs are not asked"
)
# Set (by processes/class_archive) to an archive of Spark's classes that every local driver JVM maps.
CLASS_ARCHIVE_ENV = "AETHER_JVM_CLASS_ARCHIVE"
# Set (by processes/zip_code_cache) to PySpark's zipped modules compiled, which a judging Python daemon loads.
ZIP_CODE_ENV = "AETHER_ZIP_CODE"


def timed_quick_jit(master: str) -> bool:
    """Whether the server was told (TIMED_JIT_ENV=quick) to time on the quick compiler, and `master` is local (one JVM does the work)."""
    from aether_mcp.evaluation.daemon_start import local_master

    return os.environ.get(TIMED_JIT_ENV, "").strip().lower() == "quick" and local_master(master)


def compiler_note(environment: dict | None) -> str:
    """A sentence's tail for results whose timings ran on the quick compiler; empty otherwise."""
    return " (timed on the quick JVM compiler, AETHER_MCP_BENCH_JIT=quick: JVM-side work runs faster in a long job)" if (environment or {}).get("jvm_compiler") == "quick" else ""


def jvm_compiler(spark, master: str) -> str | None:
    """The compiler the local JVM that runs every task uses, read from the JVM itself: "optimizing" (tiers up to C2),
    "quick" (C1 only), "interpreted", or None where the work runs in JVMs not asked (a cluster's executors, Spark Connect)."""
    from aether_mcp.evaluation.daemon_start import local_master

    if not local_master(master):
        return None
    try:
        jvm = spark.sparkContext._jvm
        bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
        level, info = str(bean.getVMOption("TieredStopAtLevel").getValue()), str(jvm.System.getProperty("java.vm.info"))
    except Exception:
        return None
    try:
        mode = str(bean.getVMOption("CompilationMode").getValue())
    except Exception:  # a JVM without the option
        mode = "default"
    if "interpreted" in info:
        return "interpreted"
    return "quick" if mode == "quick-only" or level in ("1", "2", "3") else "optimizing"


def create_session(master: str, conf: dict[str, str], app_name: str, quick_jit: bool = False):
    """A SparkSession for `master` with `conf` over the harness defaults; Python workers use this interpreter.

    In a confined process (AETHER_SCRATCH set) the JVM keeps its temporary files in the process's
    own temporary folder, the only place it may write, and writes no performance-data file to /tmp.
    `quick_jit`: the local driver JVM compiles with the quick compiler only (see QUICK_JIT).
    With CLASS_ARCHIVE_ENV naming an archive, the JVM maps Spark's classes from it (processes/class_archive).
    """
    from pyspark.sql import SparkSession

    if master.startswith("sc://"):
        return connect_session(master, conf)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {**HARNESS_CONF, **conf}
    options = QUICK_JIT if quick_jit else ""
    archive = os.environ.get(CLASS_ARCHIVE_ENV)
    if archive and os.path.isfile(archive) and not any(c.isspace() for c in archive):  # Spark splits the options at whitespace
        options += f" -XX:SharedArchiveFile={archive}"
    if os.environ.get("AETHER_SCRATCH") and os.environ.get("TMPDIR"):
        options += f" -Djava.io.tmpdir={os.environ['TMPDIR']} -XX:-UsePerfData"
    if options.strip():
        settings["spark.driver.extraJavaOptions"] = f"{settings.get('spark.driver.extraJavaOptions', '')} {options}".strip()
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def connect_session(remote: str, conf: dict[str, str]):
    """A Spark Connect session on `remote` (sc://host:port): the server owns the JVM and its Python workers.

    Only session (spark.sql.*) confs can be set from a client; the others belong to whoever started the server.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(remote)
    for key, value in conf.items():
        if key.startswith("spark.sql."):
            builder = builder.config(key, value)
    return builder.getOrCreate()
