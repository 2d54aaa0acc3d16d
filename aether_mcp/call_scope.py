"""The cancel signal and progress sink of the tool call running on this thread.

A tool call runs in a worker thread inside `scope(cancel, progress)`. Whatever it starts below,
however deep (a test process, a coverage child, a request to a Spark worker), picks the call's
cancel event up from here when none was passed explicitly, so cancelling the call stops all of it;
`report` sends progress from code that has no callback of its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_cancel: ContextVar[threading.Event | None] = ContextVar("aether_cancel", default=None)
_progress: ContextVar[Callable[[int, int | None, str], None] | None] = ContextVar("aether_progress", default=None)


@contextlib.contextmanager
def scope(cancel: threading.Event | None, progress: Callable[[int, int | None, str], None] | None) -> Iterator[None]:
    tokens = (_cancel.set(cancel), _progress.set(progress))
    try:
        yield
    finally:
        _progress.reset(tokens[1])
        _cancel.reset(tokens[0])


def cancel_event(explicit: threading.Event | None = None) -> threading.Event | None:
    """`explicit` if given, else the current call's cancel event (None outside a call)."""
    return explicit if explicit is not None else _cancel.get()


def report(done: int, total: int | None, message: str) -> None:
    sink = _progress.get()
    if sink is not None:
        sink(done, total, message)
