"""The judge's Python daemons forked from one kept ready: the stub Spark starts gets a daemon that answers as its own,
ends as its own, and the ready process serves no one but the JVM's stubs (daemon_fork)."""

import json
import os
import socket
import struct
import subprocess
import sys
import textwrap
import time

import pytest

from aether_mcp.confined import daemon_fork, landlock

# Plays the JVM: starts stubs as PySpark's worker factory does (the daemon module, its streams as pipes, a secret
# per factory), reads each daemon's port, then ends them as Spark does (SIGTERM, or its standard input closed).
FAKE_JVM = textwrap.dedent(
    r"""
    import json, os, signal, struct, subprocess, sys, time
    base, folder = json.loads(sys.argv[1]), sys.argv[2]

    def start(secret, **extra):
        env = dict(base, PYTHON_WORKER_FACTORY_SECRET=secret, **extra)
        stub = subprocess.Popen([sys.executable, "-m", "aether_mcp.confined.python_daemon"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE if extra else None, env=env)
        return stub, struct.unpack("!i", stub.stdout.read(4))[0]

    def children(pid):
        found = []
        for entry in os.listdir("/proc"):
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if entry.isdigit() and int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
        return sorted(found)

    a, port_a = start("first")
    b, port_b = start("second")
    c, port_c = start("third", EXTRA_SETTING="1")  # what Python fixed at start would differ: it starts its own
    ready = int(open(os.path.join(folder, "ready.pid")).read())
    print(json.dumps({"ports": [port_a, port_b, port_c], "ready": ready, "forked": children(ready), "stubs": [a.pid, b.pid, c.pid],
                      "own": children(c.pid), "third_said": c.stderr.readline().decode().strip(),
                      "ready_parent_is_the_first_stub": int(open(f"/proc/{ready}/stat").read().rsplit(")", 1)[1].split()[1]) == a.pid}), flush=True)
    sys.stdin.readline()  # the test connects to the ready process itself here
    a.send_signal(signal.SIGTERM)
    ended_a = a.wait(30)
    time.sleep(0.2)
    left = children(ready)
    b.stdin.close()
    ended_b = b.wait(30)
    c.stdin.close()
    ended_c = c.wait(30)
    print(json.dumps({"ended": [ended_a, ended_b, ended_c], "left_after_a": left, "left": children(ready)}), flush=True)
    sys.stdin.readline()
    """
)

pytestmark = pytest.mark.skipif(landlock.abi() < 6, reason=f"this kernel's Landlock ABI is {landlock.abi()}: daemons fork from a ready process only where the domain scopes signals (ABI 6)")


def test_a_ready_process_forks_the_daemons_spark_starts_refuses_other_callers_and_ends_with_its_jvm(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "call").mkdir(parents=True)
    base = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "AETHER_SCRATCH": str(scratch),
        "AETHER_CALL_SCRATCH": str(scratch / "call"),
        "AETHER_CONFINED": "1",
        "AETHER_DAEMON_GC_FREEZE": "1",
        "PYTHONUNBUFFERED": "YES",
    }
    folder = scratch / daemon_fork.FOLDER
    jvm = subprocess.Popen([sys.executable, "-c", FAKE_JVM, json.dumps(base), str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(jvm.stdout.readline())
        # two daemons forked by the one ready process, which the first stub started; the third stub's differs and runs its own
        assert len(set(started["ports"])) == 3 and all(port > 0 for port in started["ports"])
        assert len(started["forked"]) == 2 and not set(started["forked"]) & set(started["stubs"]) and started["ready_parent_is_the_first_stub"]
        assert started["own"] == [] and started["stubs"][2] not in started["forked"]
        assert started["third_said"] == "aether-mcp: the daemon starts itself (its environment differs from the ready process's (EXTRA_SETTING))"

        # any other caller (this test is no child of the JVM) is refused, its streams unused, nothing forked
        caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        caller.connect(str(folder / daemon_fork.SOCKET))
        body = json.dumps({"env": base, "argv": [], "orig_argv": [], "cwd": "/", "path": sys.path, "flags": list(sys.flags), "executable": sys.executable}).encode()
        socket.send_fds(caller, [struct.pack("!I", len(body)) + body], [0, 1, 2])
        assert daemon_fork._read_message(caller) == {"refused": "the peer is not a process Spark started"}
        caller.close()

        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        ended = json.loads(jvm.stdout.readline())
        # SIGTERM, or its input closed, ends the daemon and the stub with it, with PySpark's daemon's own status (1 either
        # way: its manager's finally clause) and the same as the third, which runs its daemon itself
        assert ended["ended"] == [1, 1, 1]
        assert len(ended["left_after_a"]) == 1 and ended["left"] == []
    finally:
        jvm.stdin.close()
        jvm.wait(30)
    ready = started["ready"]
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{ready}") and _state(ready) != "Z" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{ready}") or _state(ready) == "Z", "the ready process outlived its JVM"


def _state(pid: int) -> str:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return "gone"
    return stat[stat.rindex(")") + 2]


# What a candidate's Python worker can see of its process, field by field (digests: the message is clipped), and whether
# it may make a folder outside the call's scratch (Landlock alone decides that: os.mkdir raises no event the watch reads)
VIEW = '''import hashlib
import json
import os
import sys

TARGET = "vectorized"


def _made(path):
    try:
        os.mkdir(path)
    except PermissionError:
        return "refused"
    os.rmdir(path)
    return "made"


def evaluate(weight, express):
    seen = {
        "argv": sys.argv,
        "orig_argv": sys.orig_argv,
        "environment": sorted((name, value) for name, value in os.environ.items() if name != "PYTHON_WORKER_FACTORY_SECRET"),
        "path": sys.path,
        "flags": list(sys.flags),
        "folder": os.getcwd(),
        "session": os.getsid(0),
        "group is the daemon's": os.getpgid(0) == os.getppid(),
        "modules": sorted(name for name in sys.modules if "view_" not in name),
    }
    digests = {name: hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12] for name, value in seen.items()}
    digests["outside"] = _made("/tmp/aether-view-" + str(os.getpid()))
    digests["call"] = _made(os.path.join(os.environ["TMPDIR"], "view-" + str(os.getpid())))
    raise ValueError("VIEW" + json.dumps(digests, sort_keys=True) + "END")
'''


def _views(compared) -> list[dict]:
    return [json.loads(m.actual.split("VIEW", 1)[1].split("END", 1)[0]) for m in compared.mismatches if "VIEW" in m.actual]


def test_the_judges_workers_see_the_same_from_a_forked_daemon_as_from_one_started_itself(root, workspace, workers):
    from aether_mcp.tools import files
    from aether_mcp.tools.byte_compare import byte_compare
    from aether_mcp.workspace import Workspace

    files.write_file(root, workspace, "candidate/view_forked.py", VIEW + "# forked\n")
    forked = _views(byte_compare(root, workers, workspace, "view_forked", hidden_rows=0))
    handle = workers.get("candidate", Workspace.open_intact(root, workspace).config.spark)
    folder = handle.call_scratch.parent / daemon_fork.FOLDER
    ready = _ready_process(handle.call_scratch.parent)
    serving = [pid for pid in os.listdir("/proc") if pid.isdigit() and daemon_fork._parent_of(int(pid)) == ready]
    assert serving, "no daemon of this candidate was forked by the worker's ready process"
    # the next candidate's daemon cannot reach the ready process (its folder is a file now): the stub starts it itself
    folder.rename(folder.with_name("daemons-aside"))
    folder.write_text("")
    try:
        files.write_file(root, workspace, "candidate/view_own.py", VIEW + "# its own\n")  # other bytes: the switch ends the daemon
        own = _views(byte_compare(root, workers, workspace, "view_own", hidden_rows=0))
        assert _children_end(ready), "a daemon forked for the last candidate outlived the switch"
    finally:
        folder.unlink()
        folder.with_name("daemons-aside").rename(folder)
    assert forked and own
    assert all(view == forked[0] for view in forked + own), (forked[0], own[0])
    assert forked[0]["outside"] == "refused" and forked[0]["call"] == "made"


def _children_end(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not [child for child in os.listdir("/proc") if child.isdigit() and daemon_fork._parent_of(int(child)) == pid and _state(int(child)) not in ("Z", "gone")]:
            return True
        time.sleep(0.1)
    return False


def _ready_process(scratch) -> int:
    """The worker's ready process, as this test sees it (outside the worker's PID namespace)."""
    for pid in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
        try:
            command = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            environment = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if daemon_fork.ZYGOTE_ARG.encode() in command and f"AETHER_SCRATCH={scratch}".encode() in environment:
            return pid
    raise AssertionError(f"no ready process serves the worker in {scratch}")
