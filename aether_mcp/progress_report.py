"""Progress that never goes backwards, as MCP requires of progress notifications.

A tool's work often runs in stages that each count from zero (a comparison, then data generation,
then the timed rounds). `Stages` maps them onto one count with a fixed total; `Monotonic` guards
whatever reaches the client: the count only rises and the total never shrinks below it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Progress = Callable[[float, float | None, str], None]


class Monotonic:
    """Passes progress on, raising a count that would fall to the last one sent (plus a hair) and keeping the largest total."""

    STEP = 0.001

    def __init__(self, send: Progress) -> None:
        self._send = send
        self._done = -1.0
        self._total: float | None = None
        self._lock = threading.Lock()

    def __call__(self, done: float, total: float | None, message: str) -> None:
        with self._lock:
            done = max(float(done), self._done + self.STEP) if self._done >= 0 else max(float(done), 0.0)
            if total is not None:
                self._total = max(float(total), self._total or 0.0)
            if self._total is not None and done > self._total:
                self._total = done
            self._done = done
            sent = (round(done, 3), self._total, message)
        self._send(*sent)


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
