"""After extracting, init_workspace runs the original once: what the extraction lost is refused, never recorded as behaviour.

The extracted original/udf.py is loaded and called on 200 generated rows (the hidden-row
generator's, every supported type) in a child process (aether_mcp.confined.original_check); the
server runs no job code itself. Two failures there are
the extraction's, not the UDF's:
- an import that fails: a local module beside the job imported where the extraction does not
  follow it (inside a function), or a library this Python does not have. The job cannot run here either way, and record_cases
  would fail with an error the agent cannot fix, since original/ is protected;
- a NameError naming something the job's module defines (or star-imports): the extraction
  dropped it, and every case recorded would pin a NameError the job never raises.
A NameError for a name the job defines nowhere (Python 2's `unicode` in a branch a str never
takes) is the job's own behaviour: the extraction keeps it and init_workspace says so.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.backend import CPU
from aether_mcp.extraction import ExtractedUdf
from aether_mcp.judge.hidden_inputs import hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.processes import confined_child
from aether_mcp.wire import value_codec
from aether_mcp.workspace import ORIGINAL_MODULE, Workspace

CHECK_ROWS = 200
CHECK_SEED = 20_261_201
CHECK_TIMEOUT_S = 120
# What the child found for an extraction that passed, per extracted source and contract, for this
# server process: the same extraction checked again would run the same code on the same rows.
_CHECKED: dict[str, dict[str, Any]] = {}


def check(opened: Workspace, extracted: ExtractedUdf, source_path: Path, shown: str) -> list[str]:
    """Notes for init_workspace's result; a ToolError (nothing is created) when the extraction lost something."""
    source = opened.verified_original()
    key = hashlib.sha256(json.dumps([source, opened.config.udf.model_dump(mode="json"), extracted.star_imports], sort_keys=True).encode()).hexdigest()
    raw = _CHECKED.get(key) or _run(opened, extracted, source)
    notes = _judge(raw, extracted, source_path, shown)  # a refusal is not kept: the job's folder or the environment may change
    _CHECKED[key] = raw
    return [*extracted.notes, *notes]


def _run(opened: Workspace, extracted: ExtractedUdf, source: str) -> dict[str, Any]:
    config = opened.config
    rows = hidden_rows(config, mine(source), CHECK_ROWS, CHECK_SEED)
    folder = opened.state_dir / "init_check"
    folder.mkdir(parents=True, exist_ok=True)
    request = {
        "original": {"source": source, "filename": str(opened.path / ORIGINAL_MODULE)},
        "function": config.udf.function,
        "kind": config.udf.kind,
        "pandas_form": config.udf.pandas_form,
        "rows": value_codec.dumps(rows),
        "star_imports": extracted.star_imports,
    }
    child = confined_child.run(
        opened, "aether_mcp.confined.original_check", request, folder=folder, result_name="original_check.json",
        timeout_s=CHECK_TIMEOUT_S, cancel=None, read=[], env_extra=CPU.env(), log_name="original_check.log",
    )
    if child.raw is None:
        raise ToolError(
            f"the extracted UDF could not be loaded and run to check the extraction (exit {child.ended.returncode}): "
            f"{child.ended.tail[-600:]}; nothing was created."
        )
    return child.raw


def _judge(raw: dict[str, Any], extracted: ExtractedUdf, source_path: Path, shown: str) -> list[str]:
    name = extracted.definition.name
    missing_module = raw.get("missing_module") or next(iter(raw.get("import_errors") or {}), None)
    if missing_module:
        star = missing_module.split(".")[0] in {module.split(".")[0] for module in extracted.star_imports}
        raise ToolError(_import_problem(name, missing_module, source_path, shown, raw.get("load_error"), extracted if star else None))
    raised = raw.get("name_errors") or {}
    provided = raw.get("star_provided") or {}
    lost = sorted(n for n in {raw.get("missing_name"), *raised} if n and (n in extracted.job_names or provided.get(n)))
    if lost:
        where = raw.get("load_error") or f"NameError on {sum(raised.get(n, 0) for n in lost)} of {raw.get('rows', CHECK_ROWS)} generated rows"
        origins = [f"{n} (from {provided[n]} import *)" if provided.get(n) else n for n in lost]
        raise ToolError(
            f"the extracted UDF {name!r} lost {', '.join(origins)}, which {shown} defines: {where}. "
            "The reference would raise where the job does not, so nothing was created. This is an extraction bug in aether-mcp; "
            "until it is fixed, define the name in plain module-level code of the job's file (an assignment, def or import) and try again."
        )
    if raw.get("load_error"):
        raise ToolError(
            f"the module extracted for UDF {name!r} fails to load ({raw['load_error']}), so nothing could be recorded against it; "
            f"nothing was created. If {shown} itself imports without this error, the extraction is at fault: define what the UDF "
            "needs in plain module-level code of the job's file and try again."
        )
    notes = []
    undefined = sorted({*extracted.undefined_names, *(n for n in raised if n not in extracted.job_names)})
    if undefined:
        hit = [f"{n} on {raised[n]} of {raw.get('rows', CHECK_ROWS)} generated rows" for n in undefined if n in raised]
        notes.append(
            f"{shown} defines {', '.join(undefined)} nowhere (e.g. a Python 2 name in a branch the declared types never take); the extracted "
            f"UDF keeps them, so a row that reaches them raises NameError exactly as the job would"
            + (f" (seen here: {'; '.join(hit)})" if hit else "")
        )
    return notes


def _import_problem(name: str, module: str, source_path: Path, shown: str, load_error: str | None, star_of: ExtractedUdf | None = None) -> str:
    """Why an import failed and what to do; `star_of`: the extraction, when the module is one the job star-imports."""
    top = module.split(".")[0]
    local = [p for p in (source_path.parent / f"{top}.py", source_path.parent / top) if p.exists()]
    if local:
        return (
            f"UDF {name!r} imports the local module {module!r} ({local[0].name} beside {shown}) where init_workspace does not follow it "
            "(inside a function, or by a computed name), so the reference could not run; nothing was created. Import what the UDF uses "
            "from it at module level of the job (from module import NAME) and try again."
        )
    installed = importlib.util.find_spec(top) is not None
    detail = f" ({load_error})" if load_error else ""
    if star_of is not None and not installed:
        # `from constants import *` with no constants.py where the job finds it: most likely the project's own module, left out
        names = star_names(star_of.module_source)
        root = source_path.parents[len(Path(shown).parts) - 1]
        elsewhere = [str(path.relative_to(root)) for path in _files_named(root, f"{top}.py")]
        return (
            f"UDF {name!r} reads {', '.join(names[:12]) or 'names'} from `from {module} import *` in {shown}, and {module!r} is neither a "
            f"file beside {shown} (or in a folder above it, under the server's root) nor installed: it looks like a module of the project "
            f"that is not where the job imports it from"
            + (f" ({', '.join(elsewhere[:3])} exists, but the job imports it as {module!r} only when its folder is on the job's path)" if elsewhere else "")
            + f". Put {top}.py beside {shown} and try again (or, if {module!r} is a library, pip install {top} where aether-mcp runs). Nothing was created."
        )
    if installed:
        return f"UDF {name!r} failed to import {module!r} although it is installed{detail}; fix the import in {shown} and try again. Nothing was created."
    return (
        f"UDF {name!r} needs the module {module!r}, which is not installed in the server's Python{detail}: install it (pip install {top}) "
        "where aether-mcp runs and try again. Nothing was created."
    )


def star_names(source: str) -> list[str]:
    """Names `source` reads but binds nowhere, builtins aside: with a star import, what it expects that import to give."""
    import builtins
    import symtable

    table = symtable.symtable(source, "<extracted>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read: dict[str, None] = {}
    stack = [table]
    while stack:
        scope = stack.pop()
        stack += scope.get_children()
        for symbol in scope.get_symbols():
            global_here = scope is table or symbol.is_global()
            if global_here and symbol.is_referenced() and symbol.get_name() not in bound and not hasattr(builtins, symbol.get_name()):
                read[symbol.get_name()] = None
    return sorted(read)


def _files_named(root: Path, filename: str, most: int = 3, folders: int = 5000) -> list[Path]:
    """Up to `most` files called `filename` under `root`, looking in at most `folders` folders (hidden ones, virtual environments and workspaces skipped)."""
    import os

    found: list[Path] = []
    for seen, (folder, subfolders, files) in enumerate(os.walk(root)):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in {"aether_workspaces", "node_modules", "venv", "__pycache__"}]
        if filename in files:
            found.append(Path(folder) / filename)
        if len(found) >= most or seen >= folders:
            break
    return found
