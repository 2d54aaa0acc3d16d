"""Spark needs Java 17+: a missing or old Java is reported in one line with what to install."""

import os
import stat
import subprocess
import sys

import pytest

from aether_mcp.processes.java_runtime import JavaUnavailable, check_java, parse_java_major


def _fake_java(directory, version_line):
    directory.mkdir(parents=True, exist_ok=True)
    java = directory / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return directory


@pytest.mark.parametrize("output, major", [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_292"', 8), ('openjdk version "21" 2023-09-19', 21)])
def test_java_versions_are_read(output, major):
    assert parse_java_major(output) == major


def test_old_java_is_refused_in_one_line(tmp_path):
    bin_dir = _fake_java(tmp_path / "bin", 'java version "1.8.0_292"')
    with pytest.raises(JavaUnavailable) as caught:
        check_java({"PATH": str(bin_dir)})
    message = str(caught.value)
    assert "\n" not in message
    assert "Java 8" in message and "Java 17+" in message and "openjdk-17" in message


def test_missing_java_is_refused_in_one_line(tmp_path):
    with pytest.raises(JavaUnavailable, match=r"no `java` on PATH: install a Java 17\+ runtime"):
        check_java({"PATH": str(tmp_path)})


def test_java_home_wins_over_path(tmp_path):
    home = tmp_path / "jdk"
    _fake_java(home / "bin", 'openjdk version "11.0.2"')
    newer = _fake_java(tmp_path / "bin", 'openjdk version "21.0.1"')
    with pytest.raises(JavaUnavailable, match="Java 11"):
        check_java({"PATH": str(newer), "JAVA_HOME": str(home)})


def test_demo_without_java_says_what_to_install_without_a_stack_trace(tmp_path):
    bin_dir = _fake_java(tmp_path / "bin", 'java version "1.8.0_292"')
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    completed = subprocess.run([sys.executable, "-m", "aether_mcp", "demo"], env=env, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert completed.stderr.strip().count("\n") == 0
    assert "Spark needs Java 17+" in completed.stderr and "Traceback" not in completed.stderr
