"""Progress that never goes backwards, as MCP requires of progress notifications.

A tool's work often runs in stages that each count from zero (a comparison, then data generation,
then the timed rounds). `Stages` maps them onto one count with a fixed total; `Monotonic` guards
whatever reaches the client: the count only rises and the total never shrinks below it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Progress = Callable[[float, float | None, str], None]


class Monotonic:
    """Passes progress on, raising a count that would fall to the last one sent (plus a hair) and keeping the largest total.

    Each note is sent under the lock, so notes leave in the order their counts rise. `keep_alive` repeats
    the latest note, saying how long the step has run, whenever `every` seconds pass without one.
    """

    STEP = 0.001

    def __init__(self, send: Progress) -> None:
        self._send = send
        self._done = -1.0
        self._total: float | None = None
        self._lock = threading.Lock()
        self._message = "starting"
        self._since = time.monotonic()  # when the latest message (not its repeats) was first sent
        self._sent_at = self._since
        self._closed = False

    def __call__(self, done: float, total: float | None, message: str) -> None:
        with self._lock:
            if message != self._message:
                self._message, self._since = message, time.monotonic()
            self._deliver(done, total, message)

    def _deliver(self, done: float, total: float | None, message: str) -> None:
        if self._closed:
            return
        done = round(max(float(done), self._done + self.STEP) if self._done >= 0 else max(float(done), 0.0), 3)  # sent as rounded, so repeats still rise
        if total is not None:
            self._total = max(float(total), self._total or 0.0)
        if self._total is not None and done > self._total:
            self._total = done
        self._done = done
        self._sent_at = time.monotonic()
        self._send(done, self._total, message)

    def keep_alive(self, stop: threading.Event, every: float) -> None:
        """Until `stop` is set: repeat the latest note when `every` seconds passed since the last one."""
        while not stop.wait(min(every / 4, 1.0)):
            with self._lock:
                now = time.monotonic()
                if now - self._sent_at >= every and not stop.is_set():
                    self._deliver(max(self._done, 0.0), self._total, f"{self._message} (still working: {now - self._since:.0f} s on this step)")

    def close(self) -> None:
        """Send nothing more (waits for a note being sent)."""
        with self._lock:
            self._closed = True


class Stages:
    """Stages of known weight, reported as one count out of their summed weight."""

    def __init__(self, send: Progress, weights: dict[str, float]) -> None:
        self._send = send
        self._bases: dict[str, float] = {}
        base = 0.0
        for name, weight in weights.items():
            self._bases[name] = base
            base += weight
        self._weights = dict(weights)
        self.total = base

    def stage(self, name: str) -> Callable[[int, int | None, str], None]:
        """The progress callback for stage `name`: its own (done, total) becomes a share of the stage's weight."""
        base, weight = self._bases[name], self._weights[name]

        def report(done: int, total: int | None, message: str) -> None:
            share = min(max(done / total, 0.0), 1.0) if total else 0.0
            self._send(base + weight * share, self.total, message)

        return report

    def done(self, message: str = "done") -> None:
        self._send(self.total, self.total, message)


class ChildProgress:
    """Reads the progress file a child process appends JSON lines to, passing each complete line on once."""

    def __init__(self, forward: Callable[[dict[str, Any]], None]) -> None:
        self.forward = forward
        self.seen = 0

    def __call__(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        for line in lines[self.seen :]:
            try:
                step = json.loads(line)
            except ValueError:  # a line still being written
                break
            self.forward(step)
            self.seen += 1
