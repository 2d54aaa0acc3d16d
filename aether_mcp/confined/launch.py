"""`python -I -B -m aether_mcp.confined.launch POLICY -- ARGV...`: enter the Landlock domain, then become ARGV.

The server starts every process that runs agent code through this launcher (inside fresh network,
PID and mount namespaces where the machine allows them). POLICY is JSON: {"read": [...], "write":
[...], "loopback": bool}; with "loopback", the process is the first of a new network namespace,
whose loopback the launcher brings up (it starts down) so that Spark's processes can reach each
other, and nothing else.
The domain is entered before ARGV exists, so nothing ARGV runs, nor anything it starts (a JVM,
Spark's Python workers, a double-forked daemon), ever runs outside it. A launcher that cannot
confine exits with CONFINEMENT_FAILED instead of running ARGV unconfined.
"""

from __future__ import annotations

import json
import os
import sys

CONFINEMENT_FAILED = 97


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m aether_mcp.confined.launch POLICY_JSON -- ARGV...", file=sys.stderr)
        return 2
    from aether_mcp.confined import landlock

    try:
        policy = json.loads(argv[1])
        if policy.get("loopback"):
            loopback_up()
        landlock.restrict([str(p) for p in policy["read"]], [str(p) for p in policy["write"]])
    except (ValueError, KeyError, TypeError, OSError, landlock.LandlockError) as exc:
        print(f"aether-mcp: could not confine the process ({exc}); it was not started", file=sys.stderr, flush=True)
        return CONFINEMENT_FAILED
    command = argv[3:]
    try:
        os.execv(command[0], command)
    except OSError as exc:
        print(f"aether-mcp: could not start {command[0]}: {exc}", file=sys.stderr, flush=True)
        return 127
    return 0  # not reached


def loopback_up() -> None:
    """Bring up `lo` in this process's network namespace (a new namespace's only interface, and down)."""
    import fcntl
    import socket
    import struct

    get_flags, set_flags, up = 0x8913, 0x8914, 0x1  # SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(handle, get_flags, request))[1]
        fcntl.ioctl(handle, set_flags, struct.pack("16sH14x", b"lo", flags | up))
        if not struct.unpack("16sH14x", fcntl.ioctl(handle, get_flags, request))[1] & up:
            raise OSError("the loopback interface did not come up")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
