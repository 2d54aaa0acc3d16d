"""A file the server makes once per installation, in the background, for its Spark processes to read.

Spark's class archive (class_archive) and PySpark's zipped modules compiled (zip_code_cache) are each
made by a process of the server's own that runs no agent code, kept in the user's cache folder, where
no confined process can write, and named in an environment variable every child inherits once it
exists; confined processes may read that one file. One process on the machine makes each at a time; a
make that failed is not tried again for a day, and its log says why. Until the file exists, processes
start as they would without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from aether_mcp.processes import subprocess_runner

RETRY_AFTER_FAILURE_S = 86_400


def only_owner_writes(path: Path) -> bool:
    """A regular file of this process's user that no group or other user may write (and that no other user owns, who
    could change that)."""
    found = path.stat()
    return stat.S_ISREG(found.st_mode) and not found.st_mode & 0o022 and found.st_uid == os.getuid()


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "aether-mcp"


class MadeOnce:
    """`env` names the file `<prefix>-<key><suffix>` in `cache_home()/<subfolder>` once it is made.

    `key()`: what the file depends on (None: nothing to make here); `argv(partial)`: the command that writes it to
    `partial`, run with `env_extra()` added to the child's environment, within `timeout_s`; `keep`: how many files
    (one per installation) are kept, the ones used last.
    """

    def __init__(self, env: str, subfolder: str, prefix: str, suffix: str, key: Callable[[], str | None], argv: Callable[[Path], list[str]], env_extra: Callable[[], dict[str, str]], timeout_s: float, keep: int) -> None:
        self.env, self.subfolder, self.prefix, self.suffix = env, subfolder, prefix, suffix
        self.key, self.argv, self.env_extra, self.timeout_s, self.keep = key, argv, env_extra, timeout_s, keep
        self.name = re.compile(re.escape(prefix) + r"-[0-9a-f]{16}" + re.escape(suffix))
        self._lock = threading.Lock()
        self._making: threading.Thread | None = None
        self._inherited_dropped = False

    def folder(self) -> Path:
        return cache_home() / self.subfolder

    def valid(self, path: str | None) -> bool:
        """Whether `path` is a file this server made: named like one, in folder(), with no whitespace (Spark splits JVM
        options at it), and writable by no one but its owner (a confined process may change modes, never contents)."""
        if not path or any(c.isspace() for c in path):
            return False
        try:
            real = Path(os.path.realpath(path))
            return self.name.fullmatch(real.name) is not None and real.parent == Path(os.path.realpath(self.folder())) and only_owner_writes(real)
        except OSError:
            return False

    def ensure(self, wait_s: float = 0.0, off: bool = False) -> threading.Thread | None:
        """Point processes started from now on at the file; start making it in the background when there is none.

        Cheap once it exists. `wait_s`: wait that long for a make under way, then point at what it made. `off`: point
        at nothing. Returns the thread making it, if this process is making it. Never raises: without the file,
        processes only start more slowly."""
        if not self._inherited_dropped:  # a value the server inherited (from a server that started it, say) is not its own
            os.environ.pop(self.env, None)
            self._inherited_dropped = True
        if off:
            os.environ.pop(self.env, None)
            return None
        try:
            found = self.key()
            if found is None:
                return None
            target = self.folder() / f"{self.prefix}-{found}{self.suffix}"
            if self._use(target):
                return None
            failed = target.with_suffix(".failed")
            if failed.is_file() and time.time() - failed.stat().st_mtime < RETRY_AFTER_FAILURE_S:
                return None
        except OSError:
            return None
        with self._lock:
            if self._making is None or not self._making.is_alive():
                self._making = threading.Thread(target=self._make, args=(target,), name=f"make-{self.prefix}", daemon=True)
                self._making.start()
            making = self._making
        if wait_s > 0:  # for this process's make, or another process's (which holds the lock, so this one made none)
            deadline = time.monotonic() + wait_s
            making.join(wait_s)
            while not self._use(target) and time.monotonic() < deadline and self._being_made():
                time.sleep(0.1)
        return making

    def _being_made(self) -> bool:
        """Whether some process holds the make lock now."""
        try:
            lock = open(self.folder() / "make.lock", "a+b")
        except OSError:
            return False  # no folder to make it in: nothing is under way
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return False
            except OSError:
                return True

    def _use(self, target: Path) -> bool:
        if not self.valid(str(target)):
            return False
        with contextlib.suppress(OSError):
            os.utime(target)  # used: the newest are the ones kept
        os.environ[self.env] = str(target)
        return True

    def _make(self, target: Path) -> None:
        """Run the command; keep what it wrote (read-only) only if it ended well. The next ensure() points at it."""
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(target.parent / "make.lock", "a+b") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return  # another process is making one; a later ensure() finds it
                for stale in target.parent.glob(f".{self.prefix}-*.partial"):  # left by a process that ended while making one
                    stale.unlink(missing_ok=True)
                if target.is_file():
                    return
                partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
                try:
                    ended = subprocess_runner.run(self.argv(partial), cwd=target.parent, log_path=target.with_suffix(".log"), timeout_s=self.timeout_s, env_extra=self.env_extra())
                    if ended.returncode == 0 and partial.is_file() and partial.stat().st_size > 0:
                        os.chmod(partial, 0o444)
                        os.replace(partial, target)
                        self._prune(target.parent)
                    else:
                        target.with_suffix(".failed").write_text(f"exit {ended.returncode}; see {target.with_suffix('.log')}\n", encoding="utf-8")
                finally:
                    partial.unlink(missing_ok=True)
        except Exception:  # noqa: BLE001 - no file is only slower; its log says why
            with contextlib.suppress(OSError):
                target.with_suffix(".failed").write_text("the make failed before or after its run\n", encoding="utf-8")

    def _prune(self, where: Path) -> None:
        """Keep the files used last (each installation has its own), with their logs."""
        made = sorted(where.glob(f"{self.prefix}-*{self.suffix}"), key=lambda path: path.stat().st_mtime, reverse=True)
        for old in made[self.keep :]:
            old.unlink(missing_ok=True)
            old.with_suffix(".log").unlink(missing_ok=True)
            old.with_suffix(".failed").unlink(missing_ok=True)
