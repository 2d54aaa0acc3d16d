"""Shared fixtures: one Spark worker pool for the whole session, sandbox roots, a small job."""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path

import pytest

# The manifest key must not land in the developer's home; set before any workspace exists.
os.environ["AETHER_MCP_STATE_DIR"] = tempfile.mkdtemp(prefix="aether-test-state-")
# Servers the tests start use the shared pool or start workers on first use; one test checks the warm start.
os.environ["AETHER_MCP_WARM_START"] = "0"

from aether_mcp.processes.worker_pool import WorkerPool  # noqa: E402
from aether_mcp.path_guard import SandboxRoot  # noqa: E402
from aether_mcp.tools import workspaces  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
# (folder, UDF, arg_types for init_workspace, the hand-written equivalent candidate)
EXAMPLE_UDFS = [
    ("loyalty_pricing", "loyalty_discount", {"age": "int"}, "discount_sql"),
    ("contact_cleanup", "normalize_email", {"raw": "string"}, "email_vectorized"),
    ("delivery_geo", "haversine_km", {"lat1": "double", "lon1": "double", "lat2": "double", "lon2": "double"}, "haversine_vectorized"),
]

SHIPPING_JOB = (Path(__file__).parent / "jobs" / "shipping.py").read_text()

SHIPPING_CASES = textwrap.dedent(
    '''
    CASES = [
        {"args": [1.0, False], "expected": 4.99, "why": "light parcel"},
        {"args": [2.0, False], "expected": 4.99, "why": "2 kg is the first heavy weight"},
        {"args": [4.0, True], "expected": 15.98, "why": "heavy express doubles"},
        {"args": [None, True], "expected": None, "why": "null weight"},
        {"args": [-1.0, False], "raises": "ValueError", "why": "non-positive weight raises"},
    ]
    '''
)

SQL_CANDIDATE = textwrap.dedent(
    '''
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
        checked = F.when(weight <= 0, F.raise_error(F.lit("weight must be positive"))).otherwise(fee)
        return F.when(weight.isNull(), F.lit(None).cast("double")).when(express, checked * 2).otherwise(checked)
    '''
)

VECTORIZED_CANDIDATE = textwrap.dedent(
    '''
    import numpy as np
    import pandas as pd

    TARGET = "vectorized"


    def evaluate(weight, express):
        missing = weight.isna().to_numpy()
        w = weight.to_numpy(dtype="float64", na_value=1.0)
        if (w <= 0).any():
            raise ValueError("weight must be positive")
        fee = np.where(w < 2.0, 4.99, 4.99 + (w - 2.0) * 1.5)
        fee = np.where(express.to_numpy(dtype=bool, na_value=False), fee * 2, fee)
        return pd.Series(pd.arrays.FloatingArray(fee, missing))
    '''
)


def pytest_collection_modifyitems(config, items):
    """GPU-marked tests run only where the GPU backend can: elsewhere they are skipped, saying why."""
    from aether_mcp.backend import gpu_problem

    problem = gpu_problem("kernel")
    if problem is None:
        return
    skip = pytest.mark.skip(reason=f"no GPU backend here: {problem}; scripts/gpu_check.sh runs these on an NVIDIA machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def workers():
    """One pool, so every Spark test in the session shares warm SparkSessions."""
    pool = WorkerPool()
    yield pool
    pool.close()


@pytest.fixture
def root(tmp_path: Path) -> SandboxRoot:
    directory = tmp_path / "root"
    (directory / "jobs").mkdir(parents=True)
    (directory / "jobs" / "shipping.py").write_text(SHIPPING_JOB)
    return SandboxRoot(directory)


@pytest.fixture
def workspace(root: SandboxRoot) -> str:
    """A fresh workspace for `shipping_fee`, with the behaviour cases written."""
    created = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee")
    (Path(created.workspace) / "tests" / "cases.py").write_text(SHIPPING_CASES)
    return created.workspace
