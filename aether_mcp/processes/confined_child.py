"""Children that load agent code (the benchmark application, micro-benchmarks, profiles, device checks), run confined.

The child reads a request the server wrote into a scratch folder made for the call: the config,
the original's source (the verified bytes) and the candidate's as the server read them, and the
path of the data it times. Under confinement it can read nothing else of the workspace, and
write only that scratch folder; its result, progress and profile files are copied into the
workspace's `.aether/` afterwards, and the scratch folder is deleted with everything the child
left in it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aether_mcp.processes import confinement, subprocess_runner
from aether_mcp.processes.confinement import ConfinementStatus
from aether_mcp.workspace import CANDIDATE_DIR, ORIGINAL_MODULE, Workspace, job_constants, state_home
from aether_mcp.workspace.candidates import candidate_path

MAX_COPIED_BYTES = 512 * 1024 * 1024


@dataclass
class ChildRun:
    raw: dict[str, Any] | None  # the JSON result the child wrote, None when it wrote none
    ended: subprocess_runner.ProcessResult
    confinement: ConfinementStatus


class ChangedSinceAudit(Exception):
    """The candidate's bytes are not the ones its audit passed; `next_step` says what to do."""

    def __init__(self, message: str, next_step: str = "Audit the new bytes (audit_candidate), then run this again.") -> None:
        super().__init__(message)
        self.next_step = next_step


def sources(
    workspace: Workspace, target: str, best: Path | None = None, pinned: str | None = None, best_passed: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """The request part that replaces reading the workspace: config, original, candidate (and a best version).

    `pinned`: the SHA-256 the candidate's bytes must have (the ones an audit passed), else ChangedSinceAudit.
    `best_passed`: with `pinned`, whether an audit passed the best version's bytes (by SHA-256), else
    ChangedSinceAudit: both versions reach executors this machine does not confine.
    """
    name = target.removeprefix("candidate:")
    path = candidate_path(workspace, target)
    data = path.read_bytes()
    if pinned is not None and hashlib.sha256(data).hexdigest() != pinned:
        raise ChangedSinceAudit(f"candidate/{name}.py changed after the audit that passed it")
    found: dict[str, Any] = {
        "config": workspace.config.model_dump(mode="json"),
        "target": target,
        "original": {"source": workspace.verified_original(), "filename": str(workspace.path / ORIGINAL_MODULE)},
        "candidate": {"source": job_constants.inline(workspace, data.decode("utf-8"), f"candidate/{name}.py"), "filename": str(path)},
    }
    if best is not None:
        best_data = (best / CANDIDATE_DIR / f"{name}.py").read_bytes()
        if pinned is not None and (best_passed is None or not best_passed(hashlib.sha256(best_data).hexdigest())):
            raise ChangedSinceAudit(
                f"the best version of candidate/{name}.py, timed beside it, has no audit here that passed its bytes against the original as it is",
                "Restore the best version (revert to its snapshot; list_snapshots shows it), run audit_candidate on it, then try again.",
            )
        # the best version keeps the candidate's own label, so its findings and tracebacks read the same
        found["best"] = {"source": job_constants.inline(workspace, best_data.decode("utf-8"), f"candidate/{name}.py"), "filename": str(path)}
    return found


def run(
    workspace: Workspace,
    module: str,
    request: dict[str, Any],
    *,
    folder: Path,
    result_name: str,
    timeout_s: float,
    cancel: threading.Event | None,
    read: list[str],
    env_extra: dict[str, str],
    poll: Callable[[Path], None] | None = None,
    keep: tuple[str, ...] = (),
    keep_folders: tuple[str, ...] = (),
    wrap: Callable[[list[str]], list[str]] | None = None,
    log_name: str = "run.log",
) -> ChildRun:
    """`python -m module REQUEST` confined; its result and `keep` files end up in `folder`.

    `keep_folders`: folders the child wrote in its scratch (Parquet output, say), copied into
    `folder` under the same names: regular files only, never through a symlink.
    """
    with confinement.Scratch() as scratch:
        python_scratch = scratch.path / "python"
        python_scratch.mkdir()
        request = {**request, "result": str(scratch.path / result_name), "progress": str(scratch.path / "progress.jsonl"), "scratch": str(scratch.path)}
        request_path = scratch.path / "request.json"
        request_path.write_text(json.dumps(request), encoding="utf-8")
        argv = [sys.executable, "-I", "-B", "-m", module, str(request_path)]
        argv, status = confinement.wrap(argv, confinement.Policy(read=read, write=[str(scratch.path)]), [state_home(), workspace.root.path], network=confinement.network_need(request.get("master")))
        if wrap is not None:
            argv = wrap(argv)
        env = confinement.environment(
            scratch.path,
            {
                "PYARROW_IGNORE_TIMEZONE": "1",
                "SPARK_LOCAL_IP": "127.0.0.1",
                "TZ": workspace.config.spark.conf.get("spark.sql.session.timeZone", "UTC"),
                "AETHER_CALL_SCRATCH": str(python_scratch),
                **env_extra,
            },
            confined=status.confined,
        )
        progress = scratch.path / "progress.jsonl"
        ended = subprocess_runner.run(
            argv, cwd=scratch.path, log_path=folder / log_name, timeout_s=timeout_s, env=env, cancel=cancel, on_poll=(lambda: poll(progress)) if poll else None
        )
        if poll is not None:
            poll(progress)
        for name in (result_name, "progress.jsonl", *keep):
            produced = scratch.path / name
            if produced.is_file() and not produced.is_symlink() and produced.stat().st_size <= MAX_COPIED_BYTES:
                shutil.copyfile(produced, folder / name)
        for name in keep_folders:
            copy_regular_files(scratch.path / name, folder / name)
    try:
        raw = json.loads((folder / result_name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raw = None
    return ChildRun(raw if isinstance(raw, dict) else None, ended, status)


def copy_regular_files(source: Path, target: Path) -> int:
    """Copy the regular files under `source` into `target` (made anew), skipping symlinks and special files; bytes copied."""
    copied = 0
    if not source.is_dir() or source.is_symlink():
        return copied
    target.mkdir(parents=True, exist_ok=False)
    for entry in sorted(source.rglob("*")):
        relative = entry.relative_to(source)
        if any(part.is_symlink() for part in [source / Path(*relative.parts[: i + 1]) for i in range(len(relative.parts))]):
            continue
        if entry.is_dir():
            (target / relative).mkdir(parents=True, exist_ok=True)
        elif entry.is_file():
            copied += entry.stat().st_size
            if copied > MAX_COPIED_BYTES * 16:
                raise OSError(f"{source} holds more than {MAX_COPIED_BYTES * 16} bytes")
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry, target / relative, follow_symlinks=False)
    return copied
