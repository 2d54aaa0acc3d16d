"""What a Spark failure says went wrong, in one line: the part a person can act on, not the call that carried it.

A failure raised in the JVM reaches Python as "An error occurred while calling o9604.withColumn." with
the Java exception and its stack below; the reason is in the Java exception and, more often, in the
innermost `Caused by`. A Python worker's failure carries the Python traceback; its reason is the
exception the candidate or the original raised. Every message the server builds from a Spark failure
goes through `explain`, so results and logs show the cause.
"""

from __future__ import annotations

import re

# a Python exception as a traceback ends with it: "ValueError: could not convert..."
PYTHON_RAISE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b[^:]*: ")
CARRIER = "An error occurred while calling"
NOT_A_REASON = ("Traceback", "File ", "JVM stacktrace", "at ", "...", "== SQL", "^")
# a task's failure as the driver reports it: "Job aborted due to stage failure: Task 0 in stage 9.0 failed 1 times,
# most recent failure: Lost task 0.0 in stage 9.0 (TID 9) (host executor driver): java.util.X: message"
STAGE_FAILURE = re.compile(r"(?:[\w.]+: )?Job aborted due to stage failure: .*?most recent failure: Lost task [^:]*?\): (.+)$")
LIMIT = 600


def explain(exc: BaseException, *, named: bool = False, limit: int = LIMIT) -> str:
    """One line that says why `exc` happened; `named` puts the exception's class first when the line is not a Python raise."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    raised = [line for line in lines if PYTHON_RAISE.match(line)]
    if "Python worker" in text and raised:
        return raised[-1][:limit]
    head = next((line for line in lines if not line.startswith(NOT_A_REASON)), lines[0])
    if head.startswith(CARRIER):
        # py4j: the Java exception follows on a line of its own, as ": java.lang.X: message"
        head = next((line.removeprefix(": ") for line in lines if line.startswith(": ")), head)
    elif named:
        head = f"{exc.__class__.__name__}: {head}"
    task = STAGE_FAILURE.match(head)
    if task:
        head = f"a Spark task failed: {task.group(1)}"
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    if causes and causes[-1] not in head:
        cause = causes[-1][: limit // 2]
        return f"{head[: limit - len(cause) - 14]} (caused by {cause})"
    return head[:limit]
