"""draft_candidate: write a `sql` candidate from the extracted original, by reading it, for the judge to prove or refute."""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import drafting
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import files
from aether_mcp.workspace import CANDIDATE_DIR, ORIGINAL_MODULE, Workspace
from aether_mcp.workspace.candidates import CANDIDATE_NAME


class DraftRefusal(BaseModel):
    outside_subset: str = Field(description="the construct in the original that is outside the subset the translator knows")
    line: int = Field(description="its line in original/udf.py")
    what_to_do: str


class DraftCandidateResult(BaseModel):
    workspace: str
    drafted: bool = Field(description="true when candidate/<name>.py was written; false when the original was refused (nothing written)")
    candidate: str | None = Field(None, description="the candidate's name, for byte_compare and audit_candidate")
    path: str | None = Field(None, description="the file written, relative to the workspace")
    refused: DraftRefusal | None = None
    recipes: list[str] = Field(default_factory=list, description="the recipes of Python semantics the draft carries (notes: aether://notes/semantic-traps)")
    branches: int = Field(0, description="returns and raises of the original (helpers inlined) in the draft's CASE chain")
    notes: list[str] = Field(default_factory=list, description="where the draft may still differ and why")
    deviations_to_consider: list[str] = Field(default_factory=list, description="functions Spark computes a last bit away from Python: a ULP deviation, or the vectorized target")
    next_steps: list[str]


def draft_candidate(root: SandboxRoot, workspace: str, target: Literal["sql"] = "sql", name: str = "draft") -> DraftCandidateResult:
    opened = Workspace.open_intact(root, workspace)
    if target != "sql":
        raise ToolError(f"target {target!r}: draft_candidate writes sql candidates only; write a vectorized or kernel candidate with write_file.")
    if not CANDIDATE_NAME.match(name or ""):
        raise ToolError(f"name {name!r} is not a Python module name; use letters, digits and _ (the file is candidate/<name>.py).")
    relative = f"{CANDIDATE_DIR}/{name}.py"
    if (opened.path / relative).exists():
        raise ToolError(f"{relative} already exists and draft_candidate never overwrites a file; pass another name (e.g. name='{name}_2').")
    source = opened.verified_original()
    try:
        made = drafting.draft(source, drafting.Signature.of(opened.config.udf))
    except drafting.Refused as refused:
        return DraftCandidateResult(
            workspace=str(opened.path),
            drafted=False,
            refused=DraftRefusal(outside_subset=refused.construct, line=refused.line, what_to_do=refused.what_to_do),
            next_steps=[
                f"read {ORIGINAL_MODULE} around line {refused.line}; {refused.what_to_do}",
                "write the candidate with write_file(workspace, 'candidate/<name>.py', ...), then byte_compare and audit_candidate it",
            ],
        )
    except (RecursionError, MemoryError):
        raise ToolError("the original is nested too deeply for draft_candidate to read; write the candidate by hand (write_file).") from None
    except Exception as exc:  # a translator fault is said plainly; the server stays up and nothing is written
        raise ToolError(f"draft_candidate could not translate this original ({type(exc).__name__}: {str(exc)[:200]}); write the candidate by hand (write_file).") from None
    files.write_file(root, workspace, relative, made.text)
    return DraftCandidateResult(
        workspace=str(opened.path),
        drafted=True,
        candidate=name,
        path=relative,
        recipes=made.recipes,
        branches=made.branches,
        notes=made.notes,
        deviations_to_consider=made.deviations,
        next_steps=[
            f"byte_compare(workspace, '{name}'): the draft is a candidate like any other, proven or refuted by the judge",
            f"audit_candidate(workspace, '{name}') once it is equal; edit {relative} (read_file / write_file) where it is not",
        ],
    )
