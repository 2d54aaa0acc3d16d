"""How a confined child hands its result to the server: written last, and the process ends at once.

Candidate code can write the child's scratch folder, where the result lies. A finalizer or exit
handler it leaves behind would otherwise run after the result was written (at interpreter
shutdown) and could replace it with a forged one. `finish` writes the result and leaves through
`os._exit`, so no code runs after it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn


def progress_writer(path: str | Path) -> Callable[[int, int, str], None]:
    """A `report(done, total, message)` that appends one JSON line per step to `path`, which the server polls."""
    progress = Path(path)

    def report(done: int, total: int, message: str) -> None:
        with progress.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"done": done, "total": total, "message": message}) + "\n")

    return report


def finish(path: str | Path, result: dict[str, Any], indent: int | None = None) -> NoReturn:
    Path(path).write_text(json.dumps(result, indent=indent), encoding="utf-8")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed stream has nothing left to flush
            pass
    os._exit(0)
