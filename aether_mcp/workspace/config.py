"""A workspace's layout and its frozen config (`aether.toml`): names and models only, so that every part
of the workspace package (its derivation from the job source included) can use them without the rest."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError, field_validator

CONFIG_FILE = "aether.toml"
ORIGINAL_DIR = "original"
ORIGINAL_MODULE = "original/udf.py"
STATE_DIR = ".aether"
TESTS_DIR = "tests"
CANDIDATE_DIR = "candidate"
# Files that would let workspace content replace the harness's pytest plumbing.
PLUMBING_NAMES = frozenset({"conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"})
# Generated clutter that is neither the agent's work nor protected.
IGNORED_DIR_NAMES = frozenset({"__pycache__", ".pytest_cache", ".ipynb_checkpoints"})
MANIFEST = "protected.json"


class UdfArgConfig(BaseModel):
    name: str
    type: str
    type_from: Literal["hint", "arg_types"] = "arg_types"
    values: list[bool | int | float | str] | None = Field(None, description="the only values the job passes (a literal at every call); generated rows use just these")
    values_from: str | None = Field(None, description="where values came from, or that the argument was widened to its whole type at init")


class UdfConfig(BaseModel):
    name: str
    function: str
    kind: Literal["row", "pandas"]
    pandas_form: Literal["scalar", "iterator", "aggregate"] | None = Field(
        None, description="a pandas UDF's form: Series to Series, Iterator[Series] to Iterator[Series], or Series to a scalar per group (each argument then holds a group's values)"
    )
    return_type: str
    args: list[UdfArgConfig]
    source: str
    modules: dict[str, str] = Field(default_factory=dict, description="the job's own modules the extraction drew code from (paths relative to the root) and each file's sha256 at init")
    source_line: int
    form: str
    use_arrow: bool | None = None


class SparkConfig(BaseModel):
    master: str = "local[*]"
    conf: dict[str, str] = Field(default_factory=dict)


# local, local[4], local[*], local[2,3], spark://h:7077[,h2:7077], yarn, k8s://https://h:443
SPARK_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|spark://[\w.-]+:\d+(,[\w.-]+:\d+)*|yarn|k8s://\S+|sc://[\w.-]+(:\d+)?(/;\S*)?")


def check_master(master: str, what: str) -> str:
    """`master` if it is a Spark master URL, else an error that shows the accepted forms."""
    if not isinstance(master, str) or len(master) > 300 or not SPARK_MASTER.fullmatch(master):
        raise ValueError(f"{what} {master!r} is not a Spark master URL; give local[*], local[N], spark://HOST:PORT, yarn, k8s://URL or sc://HOST:PORT (Spark Connect)")
    return master


class BenchmarkConfig(BaseModel):
    master: str | None = Field(None, description="Spark master that run_benchmark and tune_arrow_batch use unless given one")

    @field_validator("master")
    @classmethod
    def _master(cls, value: str | None) -> str | None:
        return None if value is None else check_master(value, "[benchmark] master")


class BackendConfig(BaseModel):
    use: Literal["auto", "cpu", "gpu"] = Field(
        "auto", description="where vectorized and kernel candidates run unless a call says otherwise: auto takes the GPU where one can run them"
    )


class CompareConfig(BaseModel):
    floats: Literal["exact", "ulp"] = "exact"
    ulp_tolerance: int = Field(0, ge=0, description="floats this many ULPs apart count as equal; a declared deviation")
    min_compared_rows: int = Field(1000, ge=1, description="hidden rows on which the original returned that equal needs (or every requested row, if fewer were requested)")
    min_rows_with_a_value: int = Field(10, ge=0, description="of those, rows on which the original gave a value (not null, NaN or empty) that equal needs")


class TestsConfig(BaseModel):
    timeout_s: int = 300
    branch_coverage_gate: float = Field(1.0, ge=0.0, le=1.0, description="share of lines and branches covered or justified")
    mutation_score_gate: float = Field(0.8, ge=0.0, le=1.0, description="share of mutants killed (or every survivor justified)")


class WorkspaceConfig(BaseModel):
    """The frozen contents of aether.toml."""

    format: int = 1
    udf: UdfConfig
    spark: SparkConfig = Field(default_factory=SparkConfig)
    compare: CompareConfig = Field(default_factory=CompareConfig)
    tests: TestsConfig = Field(default_factory=TestsConfig)
    benchmark: BenchmarkConfig = Field(default_factory=BenchmarkConfig)
    backend: BackendConfig = Field(default_factory=BackendConfig)


def load_config(path: Path) -> WorkspaceConfig:
    try:
        data = tomllib.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
        return WorkspaceConfig.model_validate(data)
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ToolError(
            f"{path / CONFIG_FILE} cannot be read ({exc.__class__.__name__}: {str(exc).splitlines()[0]}). "
            "It is written by init_workspace and must not be edited; create a fresh workspace with init_workspace."
        ) from exc
