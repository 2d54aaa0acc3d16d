"""How far UDFs written in the shapes public jobs use get through the first loop, step by step.

Each shape (tests/shapes/: the job, the modules it imports, a hand-written candidate) goes through
init_workspace, record_cases, run_tests on the original, byte_compare of its candidate and the job
converted as apply_conversion converts it, on one warm worker pool. Prints, per step, how many got through, then a row per shape (what it stands for,
each step's result, the rows byte_compare compared, seconds), and the machine. A shape the server
cannot take yet counts as refused up front when init_workspace refuses it with a reason.

    .venv/bin/python benchmarks/udf_shapes.py [--hidden-rows 1200] [--only NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
from compare_latency import machine  # noqa: E402
from shapes.catalog import SHAPES, STEPS, run_shape  # noqa: E402

MIN_COMPARED = 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden-rows", type=int, default=1200)
    parser.add_argument("--only", nargs="+", choices=[shape.name for shape in SHAPES])
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    options = parser.parse_args()
    os.environ["AETHER_MCP_STATE_DIR"] = tempfile.mkdtemp(prefix="aether-bench-state-")
    from aether_mcp.processes.worker_pool import WorkerPool

    shapes = [shape for shape in SHAPES if not options.only or shape.name in options.only]
    pool = WorkerPool()
    started = time.monotonic()
    outcomes = []
    try:
        for shape in shapes:
            with tempfile.TemporaryDirectory(prefix="aether-shape-") as folder:
                try:
                    outcome = run_shape(shape, Path(folder), pool, hidden_rows=options.hidden_rows)
                except Exception as exc:  # a step that fails outright is a result too
                    print(f"{shape.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                    from shapes.catalog import Outcome

                    outcome = Outcome(shape, steps={"error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            outcomes.append(outcome)
            print(f"{shape.name}: {outcome.steps}", file=sys.stderr, flush=True)
    finally:
        pool.close()
    elapsed = time.monotonic() - started
    print(report(outcomes, options.hidden_rows, elapsed))
    if options.json:
        options.json.write_text(json.dumps([{"shape": o.shape.name, "steps": o.steps, "seconds": o.seconds, "compared_rows": o.compared_rows, "with_a_value": o.rows_with_a_value} for o in outcomes], indent=1))


def passed(outcome, step: str) -> bool:
    result = outcome.steps.get(step, "")
    if step == "byte_compare":  # a meaningful comparison: equal on enough rows, a tenth of them with a value (not null, NaN or empty)
        return result.startswith("equal") and outcome.compared_rows >= MIN_COMPARED and outcome.rows_with_a_value * 10 >= outcome.compared_rows
    return result.startswith("ok")


def report(outcomes, hidden_rows: int, elapsed: float) -> str:
    refused = [o for o in outcomes if o.steps.get("init_workspace", "").startswith("refused")]
    lines = [
        f"{len(outcomes)} UDFs, byte_compare with {hidden_rows} hidden rows (equal on at least {MIN_COMPARED} compared rows, a tenth of them with a value, "
        f"counts as through; apply: the job converted with no Python UDF left and every name it calls the UDF by still bound), {elapsed:.0f} s in all",
        "",
    ]
    lines += ["| step | through | refused up front | stopped |", "|---|---|---|---|"]
    for step in STEPS:
        through = sum(1 for o in outcomes if passed(o, step))
        stopped = len(outcomes) - through - len(refused)
        lines.append(f"| {step} | {through} | {len(refused)} | {stopped} |")
    lines += ["", "| shape | stands for | init_workspace | record_cases | run_tests | byte_compare | apply | seconds |", "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        cells = [_cell(o.steps.get(step, "error" if "error" in o.steps else "-")) for step in STEPS]
        lines.append(f"| {o.shape.name} | {o.shape.covers} | " + " | ".join(cells) + f" | {sum(o.seconds.values()):.0f} |")
    lines += ["", f"Machine: {machine()}"]
    return "\n".join(lines)


def _cell(text: str) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 90 else text[:87] + "..."


if __name__ == "__main__":
    main()
