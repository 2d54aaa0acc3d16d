"""Confinement of processes that run agent code: Landlock for files, a PID namespace for lifetime, a clean environment."""

import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from aether_mcp.confined import landlock
from aether_mcp.confined.launch import CONFINEMENT_FAILED
from aether_mcp.processes import confinement, subprocess_runner


def run_confined(tmp_path, script: str, read: list[str], forbidden: list[Path] | None = None):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    argv, status = confinement.wrap([sys.executable, "-I", "-c", textwrap.dedent(script)], confinement.Policy(read=read, write=[str(scratch)]), forbidden or [])
    ended = subprocess_runner.run(argv, cwd=scratch, log_path=tmp_path / "run.log", timeout_s=60, env=confinement.environment(scratch))
    return ended, status


def test_the_machine_is_probed_from_first_principles():
    found = confinement.machine()
    if landlock.abi() == 0:
        assert "Landlock" in found.problem
    else:
        # the probe read and wrote outside its policy and was refused both times
        assert found.problem is None and found.landlock_abi == landlock.abi()


def test_a_confined_process_reads_its_policy_and_writes_only_its_scratch(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("server state")
    given = tmp_path / "given"
    given.mkdir()
    (given / "cases.py").write_text("CASES = []\n")
    script = f"""
    import json
    def attempt(action):
        try:
            action()
            return "allowed"
        except PermissionError:
            return "refused"
    print(json.dumps({{
        "read secret": attempt(lambda: open({str(secret)!r}).read()),
        "read //secret": attempt(lambda: open("/" + {str(secret)!r}).read()),
        "read /proc/self/root/secret": attempt(lambda: open("/proc/self/root" + {str(secret)!r}).read()),
        "read given": attempt(lambda: open({str(given / 'cases.py')!r}).read()),
        "write beside secret": attempt(lambda: open({str(tmp_path / 'planted')!r}, "w").write("x")),
        "write given": attempt(lambda: open({str(given / 'cases.py')!r}, "a").write("x")),
        "write scratch": attempt(lambda: open({str(tmp_path / 'scratch' / 'mine')!r}, "w").write("x")),
    }}))
    """
    ended, status = run_confined(tmp_path, script, read=[str(given)])
    assert status.confined, status.how
    seen = json.loads(ended.tail.strip().splitlines()[-1])
    assert seen == {
        "read secret": "refused",
        "read //secret": "refused",
        "read /proc/self/root/secret": "refused",
        "read given": "allowed",
        "write beside secret": "refused",
        "write given": "refused",
        "write scratch": "allowed",
    }
    assert not (tmp_path / "planted").exists() and (given / "cases.py").read_text() == "CASES = []\n"


def test_no_process_outlives_its_call_not_even_a_double_forked_daemon(tmp_path):
    token = f"aether-orphan-{secrets.token_hex(6)}"
    script = f"""
    import os, subprocess, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", {token!r}], start_new_session=True)
        os._exit(0)
    time.sleep(1)
    """
    ended, status = run_confined(tmp_path, script, read=[])
    assert ended.returncode == 0
    if not status.pid_namespace:
        # without a PID namespace only the process group is ended: say so, and show it
        assert "without a PID namespace" in status.how
        return
    time.sleep(0.5)
    assert not _processes_with(token)


def test_without_a_pid_namespace_the_same_daemon_would_survive(tmp_path):
    token = f"aether-orphan-{secrets.token_hex(6)}"
    script = f"import os, subprocess, sys\nif os.fork() == 0:\n    os.setsid()\n    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', {token!r}], start_new_session=True)\n    os._exit(0)\n"
    subprocess_runner.run([sys.executable, "-I", "-c", script], cwd=tmp_path, log_path=tmp_path / "plain.log", timeout_s=60)
    time.sleep(0.5)
    survivors = _processes_with(token)
    try:
        assert survivors, "the comparison above means something only if an unconfined daemon does survive"
    finally:
        for pid in survivors:
            os.kill(pid, 9)


def test_a_confined_process_reaches_nothing_on_the_hosts_network_but_has_its_own_loopback(tmp_path):
    import socket

    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(1.0)
    tcp = socket.create_server(("127.0.0.1", 0))
    tcp.settimeout(1.0)
    script = f"""
    import json, socket
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"batch", ("127.0.0.1", {udp.getsockname()[1]}))
    try:
        socket.create_connection(("127.0.0.1", {tcp.getsockname()[1]}), timeout=5).close()
        host = "reached"
    except OSError as exc:
        host = type(exc).__name__
    with socket.create_server(("127.0.0.1", 0)) as own:
        socket.create_connection(own.getsockname(), timeout=5).close()
    print(json.dumps({{"host": host, "interfaces": [name for _, name in socket.if_nameindex()]}}))
    """
    try:
        ended, status = run_confined(tmp_path, script, read=[])
        assert status.confined and status.network_sealed, status.how
        seen = json.loads(ended.tail.strip().splitlines()[-1])
        assert seen == {"host": "ConnectionRefusedError", "interfaces": ["lo"]}
        for listener, receive in ((udp, lambda: udp.recvfrom(100)), (tcp, tcp.accept)):
            try:
                got = receive()
            except TimeoutError:
                got = None
            assert got is None, f"{got} reached the host's {listener}"
    finally:
        udp.close()
        tcp.close()


def test_a_process_that_needs_the_hosts_network_is_not_called_confined(tmp_path):
    need = confinement.network_need("spark://cluster:7077")
    assert confinement.network_need("local[*]") is None and "spark://cluster:7077" in need
    argv, status = confinement.wrap(["true"], confinement.Policy(read=[], write=[str(tmp_path)]), [], network=need)
    assert not status.confined and not status.network_sealed
    assert "on the host's network" in status.how and "spark://cluster:7077" in status.how
    assert "--net" not in argv


def test_the_environment_names_nothing_of_the_servers_state(tmp_path, monkeypatch):
    monkeypatch.setenv("AETHER_MCP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    env = confinement.environment(tmp_path / "scratch")
    assert "AETHER_MCP_STATE_DIR" not in env
    assert all(env[name].startswith(str(tmp_path / "scratch")) for name in ("HOME", "TMPDIR", "XDG_STATE_HOME", "XDG_CACHE_HOME"))


def test_a_root_inside_what_confined_code_must_read_cannot_be_confined(tmp_path):
    inside = Path(sys.prefix) / "lib"
    argv, status = confinement.wrap(["true"], confinement.Policy(read=[], write=[str(tmp_path)]), [inside])
    assert not status.confined and argv == ["true"]  # run as it is, and said so, never half-confined
    if confinement.machine().problem is None:
        assert f"{os.path.realpath(inside)} lies inside" in status.how


def test_the_launcher_never_runs_a_command_it_could_not_confine(tmp_path):
    marker = tmp_path / "ran"
    ended = subprocess.run(
        [sys.executable, "-I", "-m", "aether_mcp.confined.launch", "not json", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ended.returncode == CONFINEMENT_FAILED and "it was not started" in ended.stderr
    assert not marker.exists()


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_only_the_judges_python_daemon_freezes_what_it_preloaded():
    # The candidate worker sets the variable for its Spark Python workers; the benchmark and validation applications
    # do not, so their reused workers collect as a job's do and their timings include it.
    from aether_mcp.confined import python_daemon

    script = "import gc; from aether_mcp.confined import python_daemon as d; d._preload(); d._freeze_where_judging(); print(gc.get_freeze_count())"
    counts = {}
    for value in ("1", None):
        env = {k: v for k, v in os.environ.items() if k != python_daemon.GC_FREEZE_ENV} | ({python_daemon.GC_FREEZE_ENV: value} if value else {})
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        counts[value] = int(done.stdout)
    assert counts["1"] > 10_000 and counts[None] == 0, counts


def test_in_its_own_pid_namespace_a_worker_ends_every_process_but_those_it_keeps_and_reaps_them(tmp_path):
    # what the candidate worker does at a switch to another candidate (aether_mcp.confined.leftovers), against three
    # kinds of leftover: one in a session of its own whose parent is gone (adopted by PID 1), one whose main thread
    # ended while another runs (its state reads as a zombie), and one that forks and exits over and over (a new pid
    # each time), each started as a detached child, as a candidate's worker would
    script = """
    import json, os, subprocess, sys, time
    from aether_mcp.confined import leftovers
    kept = subprocess.Popen(["sleep", "60"])
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "61"])
        os._exit(0)
    threads = "import ctypes, threading, time\\nthreading.Thread(target=time.sleep, args=(60,)).start()\\ntime.sleep(0.2)\\nctypes.CDLL(None).syscall(60, 0)"
    hops = "import os, time\\nend = time.time() + 20\\nwhile time.time() < end:\\n    if os.fork():\\n        os._exit(0)"
    for code in (threads, hops):
        os.posix_spawn(sys.executable, [sys.executable, "-c", code], dict(os.environ), setsid=True)
    time.sleep(1.0)
    before = [pid for pid in leftovers._processes() if pid != 1]
    killed = leftovers.end_all_but({kept.pid})
    time.sleep(0.5)
    print(json.dumps({"pid": os.getpid(), "before": len(before), "kept before": kept.pid in before, "killed": len(killed), "after": sorted(leftovers._processes()), "kept": kept.pid, "alive": kept.poll() is None}))
    kept.kill()
    """
    ended, status = run_confined(tmp_path, script, read=[])
    seen = json.loads(ended.tail.strip().splitlines()[-1])
    if not status.pid_namespace:
        assert seen["pid"] != 1 and seen["killed"] == 0  # not PID 1 of a namespace of its own: nothing is its to end
        return
    # the kept one, the first fork's child (ended, unreaped), the adopted sleep, the one-thread leader and a hopper (with
    # the pids it left, ended) were there; all but the kept one were killed and reaped, the hopper at whatever pid it
    # had reached
    assert seen["pid"] == 1 and seen["before"] >= 5 and seen["kept before"]
    assert seen["killed"] >= 3 and seen["after"] == [1, seen["kept"]] and seen["alive"]
