"""What the watch in a confined process saw agent code do, and which audit rule each kind of event breaks.

The events come from processes that run agent code, so they are data, never verdicts: the
server decides what they mean. Any event is a blocking `audit_candidate` finding; `byte_compare`
and `run_tests` list them too.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MAX_SHOWN = 50

RULES = {
    "sys.settrace": "evades_watch",
    "sys.setprofile": "evades_watch",
    "sys.addaudithook": "evades_watch",
    "code.__new__": "evades_watch",
    "function.__new__": "evades_watch",
    "compile": "reaches_original",
    "exec": "reaches_original",
    "marshal.loads": "reaches_original",
    "pickle.find_class": "reaches_original",
    "sys._getframe": "reads_forbidden",
    "sys._current_frames": "reads_forbidden",
    "sys._current_exceptions": "reads_forbidden",
    "gc.get_objects": "reads_forbidden",
    "gc.get_referrers": "reads_forbidden",
    "gc.get_referents": "reads_forbidden",
    "object.__getattr__": "reads_forbidden",
    "object.__setattr__": "tampering",
    "object.__delattr__": "tampering",
    "import": "unexpected_import",
    "os.listdir": "reads_forbidden",
    "os.scandir": "reads_forbidden",
    "os.putenv": "tampering",
    "os.unsetenv": "tampering",
}


class WatchEvent(BaseModel):
    event: str = Field(description="the audit event agent code raised (sys.settrace, open, import, subprocess.Popen, ...)")
    detail: str
    file: str = Field(description="the agent's file that raised it")
    line: int | None
    refused: bool = Field(description="the watch refused the operation there and then (it raised in the agent's code)")

    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.event} ({self.detail}) at {where}" + (", refused" if self.refused else "")


def parse(raw: list[dict[str, Any]] | None) -> list[WatchEvent]:
    """Events as reported by a confined process, deduplicated, in the order seen."""
    found: list[WatchEvent] = []
    seen: set[tuple[str, str, str, int | None]] = set()
    for item in raw or []:
        try:
            event = WatchEvent.model_validate(item)
        except ValueError:
            continue
        key = (event.event, event.detail, event.file, event.line)
        if key not in seen and len(found) < MAX_SHOWN:
            seen.add(key)
            found.append(event)
    return found


def rule_of(event: WatchEvent) -> str:
    """The audit rule an event breaks."""
    if event.event == "open":
        return "tampering" if event.detail.endswith("(write)") else "reads_forbidden"
    if event.event == "import":
        top = event.detail.split(".")[0]
        if top in ("original", "udf", "tests", "cases", "aether_mcp", "importlib", "runpy", "pickle", "marshal", "builtins"):
            return "reaches_original"
        if top in ("threading", "multiprocessing", "concurrent", "subprocess", "socket", "ctypes", "asyncio", "signal", "_thread"):
            return "escape"
    return RULES.get(event.event, "escape")
