"""The one subprocess runner: timeouts kill the whole group, output is capped, env is allow-listed."""

import os
import sys
import threading
import time

from aether_mcp.processes import subprocess_runner


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_timeout_kills_the_process_and_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time;"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid));"
        "time.sleep(600)"
    )
    started = time.monotonic()
    result = subprocess_runner.run(_python(code), cwd=tmp_path, log_path=tmp_path / "log", timeout_s=3)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - started < 30
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the grandchild survived the timeout")


def test_output_beyond_the_cap_is_dropped_but_counted(tmp_path):
    code = "import sys\nfor _ in range(64): sys.stdout.write('x' * 65536)\n"
    result = subprocess_runner.run(_python(code), cwd=tmp_path, log_path=tmp_path / "log", timeout_s=60, max_log_bytes=1 << 20)
    assert result.returncode == 0
    assert result.log_truncated
    assert result.output_bytes == 64 * 65536
    assert (tmp_path / "log").stat().st_size < (1 << 20) + 200
    assert result.tail.endswith("x")


def test_stdin_is_closed_and_environment_is_allow_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak")
    code = "import os, sys; print(repr(sys.stdin.read())); print(sorted(k for k in os.environ if 'SECRET' in k or k == 'EXTRA'))"
    result = subprocess_runner.run(_python(code), cwd=tmp_path, log_path=tmp_path / "log", timeout_s=30, env_extra={"EXTRA": "1"})
    assert result.returncode == 0
    assert "''" in result.tail
    assert "['EXTRA']" in result.tail


def test_cancel_stops_the_run(tmp_path):
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    result = subprocess_runner.run(_python("import time; time.sleep(600)"), cwd=tmp_path, log_path=tmp_path / "log", timeout_s=120, cancel=cancel)
    assert result.cancelled and not result.timed_out
