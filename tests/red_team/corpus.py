"""The red-team corpus: candidates (honest and cheating) for the bundled examples and small rules jobs.

Each candidate file starts with `# expect: honest` or `# expect: <rule>`, and a cheat's second
line says which kinds of check must each catch it: `# caught by: static`, `dynamic` or both, so a
broken dynamic check cannot hide behind a static rule that still fires. A case of one of the second
red team's classes says which (`# class: 3`); those are audited at the audit's default sizes. A cheat that is right only
where it can tell it is judged is `# expect: unequal`, `# caught by: comparison`: in a judged world
it cannot tell apart from the job's, the comparison sees what the job would. The example folders'
own candidates are honest. `UDFS` says where each UDF comes from and which rows its cases record.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


@dataclass(frozen=True)
class UdfSource:
    job: Path
    udf: str
    arg_types: dict[str, str] | None
    cases: Path | None = None  # a ready cases.py; otherwise `rows` are recorded from the original
    rows: tuple = ()


UDFS = {
    "loyalty_discount": UdfSource(REPO / "examples/loyalty_pricing/job.py", "loyalty_discount", {"age": "int"}, REPO / "examples/loyalty_pricing/cases.py"),
    "normalize_email": UdfSource(REPO / "examples/contact_cleanup/job.py", "normalize_email", {"raw": "string"}, REPO / "examples/contact_cleanup/cases.py"),
    "haversine_km": UdfSource(REPO / "examples/delivery_geo/job.py", "haversine_km", {k: "double" for k in ("lat1", "lon1", "lat2", "lon2")}, REPO / "examples/delivery_geo/cases.py"),
    "shipping_fee": UdfSource(HERE.parent / "jobs/shipping.py", "shipping_fee", None, rows=([1.0, False], [2.0, False], [4.0, True], [None, True], [-1.0, False], ["NaN", True])),
    "is_adult": UdfSource(HERE / "jobs/rules.py", "is_adult", None, rows=([17], [18], [19], [None], [-1])),
    "safe_ratio": UdfSource(HERE / "jobs/rules.py", "safe_ratio", None, rows=([1.0, 4.0], [1.0, 0.0], [1.0, -0.0], [None, 2.0], ["NaN", 2.0], [3.0, "Infinity"])),
    "grade": UdfSource(HERE / "jobs/rules.py", "grade", None, rows=([95], [90], [89], [75], [60], [55], [50], [49], [None])),
    "late_fee": UdfSource(HERE / "jobs/rules.py", "late_fee", None, rows=([3, 100.0], [0, 100.0], [-2, 100.0], [100, 100.0], [5, "NaN"], [None, 1.0])),
    "bucket": UdfSource(HERE / "jobs/rules.py", "bucket", None, rows=([10], [-10], [0], [7], [None])),
    "magnitude": UdfSource(HERE / "jobs/rules.py", "magnitude", None, rows=([-2.5], [2.5], ["-0.0"], ["NaN"], [None])),
}
EXAMPLE_HONEST = {
    "loyalty_discount": REPO / "examples/loyalty_pricing/candidates/discount_sql.py",
    "normalize_email": REPO / "examples/contact_cleanup/candidates/email_vectorized.py",
    "haversine_km": REPO / "examples/delivery_geo/candidates/haversine_vectorized.py",
}


@dataclass(frozen=True)
class Entry:
    udf: str
    name: str
    path: Path
    expect: str  # "honest" or the rule that must catch it
    target: str
    checks: tuple[str, ...] = ()  # the kinds of check ("static", "dynamic") that must each find that rule
    attack_class: int | None = None  # the second red team's class it is a case of (`# class: N`), if any

    @property
    def id(self) -> str:
        return f"{self.udf}/{self.name}"


def entries() -> list[Entry]:
    found = [Entry(udf, path.stem, path, "honest", _target(path)) for udf, path in EXAMPLE_HONEST.items()]
    for path in sorted((HERE / "candidates").glob("*/*.py")):
        text = path.read_text(encoding="utf-8")
        match = re.match(r"# expect: (\w+)", text)
        if not match:
            raise AssertionError(f"{path} lacks its '# expect:' line")
        caught = re.search(r"^# caught by: ([a-z, ]+)$", text, re.MULTILINE)
        checks = tuple(c.strip() for c in caught.group(1).split(",")) if caught else ()
        if match.group(1) != "honest" and not checks:
            raise AssertionError(f"{path} lacks its '# caught by:' line")
        attack = re.search(r"^# class: (\d+)$", text, re.MULTILINE)
        found.append(Entry(path.parent.name, path.stem, path, match.group(1), _target(path), checks, int(attack.group(1)) if attack else None))
    return found


def _target(path: Path) -> str:
    match = re.search(r"^TARGET = \"(\w+)\"", path.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1) if match else "unknown"


def make_workspaces(root, workers, base: Path) -> dict[str, str]:
    """One workspace per UDF under `base` (the root's folder), with its cases and every corpus candidate."""
    from aether_mcp.tools import case_recording, files, workspaces

    made = {}
    for udf, source in UDFS.items():
        folder = base / "jobs" / udf
        folder.mkdir(parents=True)
        shutil.copy(source.job, folder / "job.py")
        ws = workspaces.init_workspace(root, f"jobs/{udf}/job.py", source.udf, arg_types=source.arg_types).workspace
        if source.cases:
            files.write_file(root, ws, "tests/cases.py", source.cases.read_text())
        else:
            case_recording.record_cases(root, workers, ws, [list(row) for row in source.rows], why="red-team cases")
        made[udf] = ws
    for entry in entries():
        files.write_file(root, made[entry.udf], f"candidate/{entry.name}.py", entry.path.read_text())
    return made
