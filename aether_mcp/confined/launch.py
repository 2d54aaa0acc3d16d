"""`python -I -B -m aether_mcp.confined.launch POLICY -- ARGV...`: enter the Landlock domain, then become ARGV.

The server starts every process that runs agent code through this launcher (inside a fresh PID
and mount namespace where the machine allows one). POLICY is JSON: {"read": [...], "write": [...]}.
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
        landlock.restrict([str(p) for p in policy["read"]], [str(p) for p in policy["write"]])
    except (ValueError, KeyError, TypeError, landlock.LandlockError) as exc:
        print(f"aether-mcp: could not confine the process ({exc}); it was not started", file=sys.stderr, flush=True)
        return CONFINEMENT_FAILED
    command = argv[3:]
    try:
        os.execv(command[0], command)
    except OSError as exc:
        print(f"aether-mcp: could not start {command[0]}: {exc}", file=sys.stderr, flush=True)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
