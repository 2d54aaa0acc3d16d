"""Find the Java that Spark will use and check it is new enough, before any JVM starts.

Spark 4 needs Java 17 or newer. Like Spark's launcher, `$JAVA_HOME/bin/java` wins over the
`java` on PATH. The check runs `java -version` once per (path, mtime) and caches the answer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIN_JAVA = 17
INSTALL_HINT = "install a Java 17+ runtime (e.g. `apt install openjdk-17-jre-headless` or `brew install openjdk@17`) and put it on PATH or set JAVA_HOME"


class JavaUnavailable(RuntimeError):
    """Spark cannot start here; the message is one line saying what to install."""


@dataclass(frozen=True)
class JavaInfo:
    path: str
    major: int
    version_text: str


_cache: dict[tuple[str, float], JavaInfo] = {}


def find_java(env: dict[str, str] | None = None) -> str | None:
    env = dict(os.environ) if env is None else env
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java", path=env.get("PATH"))


def check_java(env: dict[str, str] | None = None) -> JavaInfo:
    """The Java Spark will use; raises JavaUnavailable (one line) when it is missing or too old."""
    env = dict(os.environ) if env is None else env
    java = find_java(env)
    if java is None:
        where = f"JAVA_HOME={env['JAVA_HOME']} has no bin/java" if env.get("JAVA_HOME") else "no `java` on PATH"
        raise JavaUnavailable(f"Spark needs Java {MIN_JAVA}+, but {where}: {INSTALL_HINT}.")
    key = (java, os.stat(java).st_mtime)
    if key in _cache:
        return _check_major(_cache[key])
    try:
        completed = subprocess.run(
            [java, "-version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            env={k: v for k, v in env.items() if k in ("PATH", "HOME", "JAVA_HOME", "LANG")},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaUnavailable(f"Spark needs Java {MIN_JAVA}+, but `{java} -version` failed ({exc.__class__.__name__}): {INSTALL_HINT}.") from exc
    text = (completed.stderr + completed.stdout).decode("utf-8", errors="replace")
    major = parse_java_major(text)
    if major is None:
        raise JavaUnavailable(f"Spark needs Java {MIN_JAVA}+, but `{java} -version` did not report a version: {INSTALL_HINT}.")
    info = JavaInfo(path=java, major=major, version_text=text.strip().splitlines()[0] if text.strip() else "")
    _cache[key] = info
    return _check_major(info)


def parse_java_major(version_output: str) -> int | None:
    """The major version from `java -version` output (`1.8.0_292` is 8, `17.0.15` is 17)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not match:
        return None
    first = int(match.group(1))
    if first == 1 and match.group(2):
        return int(match.group(2))
    return first


def _check_major(info: JavaInfo) -> JavaInfo:
    if info.major < MIN_JAVA:
        raise JavaUnavailable(f"Spark needs Java {MIN_JAVA}+, but {info.path} is Java {info.major}: {INSTALL_HINT}.")
    return info
