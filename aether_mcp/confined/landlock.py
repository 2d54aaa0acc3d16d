"""Linux Landlock through its three system calls: a process restricts itself, and every child inherits it.

Landlock is unprivileged (kernel 5.13+) and can only ever narrow what a process may do: a
domain, once entered, cannot be left, and a later `restrict` stacks a narrower domain on top.
Rules name the folders (or files) that stay readable or writable; everything else on the file
system is refused, whatever the Unix permissions say. From ABI 6 the domain is also scoped: its
processes cannot signal processes outside it, nor connect to abstract Unix sockets made outside it.
Landlock also refuses ptrace-style access (`/proc/PID/environ`, `/proc/PID/mem`) to processes
outside the domain.

Only `ctypes` and `os`: this module runs before anything else in a confined process.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
_PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM | REFER | TRUNCATE
# Rights that make sense on a file (not a folder) in a path-beneath rule.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE


class LandlockError(OSError):
    """Landlock is not available here, or a rule could not be added."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    if sys.platform != "linux":
        raise LandlockError("Landlock is a Linux feature")
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise LandlockError(f"Landlock system call numbers are unknown for {platform.machine()}")
    return ctypes.CDLL(None, use_errno=True), numbers


def abi() -> int:
    """The kernel's Landlock ABI version, 0 where Landlock is missing or disabled."""
    try:
        libc, (create, _, _) = _libc()
    except (LandlockError, OSError):
        return 0
    version = libc.syscall(create, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, int(version))


def restrict(read: list[str], write: list[str]) -> int:
    """Enter a domain where only `read` (and `write`) paths are readable and only `write` paths writable.

    Paths that do not exist are skipped. Returns the ABI used; raises LandlockError when the
    kernel refuses, so a caller that asked for confinement never runs unconfined by accident.
    """
    version = abi()
    if version < 1:
        raise LandlockError("this kernel offers no Landlock (Linux 5.13+ with landlock in the LSM list)")
    libc, (create, add_rule, restrict_self) = _libc()
    handled = READ | WRITE
    if version < 2:
        handled &= ~REFER
    if version < 3:
        handled &= ~TRUNCATE
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    attr = _RulesetAttr(handled, 0, scoped)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else 16 if version >= 4 else 8
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise LandlockError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    try:
        for paths, access in ((read, READ), (write, READ | WRITE)):
            for path in paths:
                _add(libc, add_rule, ruleset, path, access & handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockError(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}")
        if libc.syscall(restrict_self, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise LandlockError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return version


def _add(libc, add_rule: int, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # nothing there to allow
    try:
        if not os.path.isdir(path):
            access &= FILE_RIGHTS
        rule = _PathBeneath(access, fd)
        if libc.syscall(add_rule, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise LandlockError(f"landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
