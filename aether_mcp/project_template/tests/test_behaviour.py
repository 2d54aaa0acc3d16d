"""Every case in cases.py, evaluated through Spark on the target under test, compared exactly."""

import pytest
from cases import CASES

from aether_mcp.judge.compare import difference
from aether_mcp.wire.value_codec import Raised


@pytest.fixture(scope="module")
def outputs(udf_under_test):
    # One Spark job for all cases; each test below checks its own row.
    return udf_under_test([case["args"] for case in CASES])


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"case{i}" for i in range(len(CASES))])
def test_case(udf_under_test, outputs, index):
    case = CASES[index]
    actual = outputs[index]
    context = f"args={case['args']!r} ({case.get('why', '')})"
    if "raises" in case:
        # The job must fail on this row. A candidate cannot raise the same Python type from
        # Spark SQL, so only the original is held to the exact exception type.
        assert isinstance(actual, Raised), f"{context}: expected the UDF to raise {case['raises']}, got {actual!r}"
        if udf_under_test.target == "original":
            assert actual.type == case["raises"], f"{context}: expected {case['raises']}, raised {actual}"
        return
    problem = difference(case["expected"], actual)
    assert problem is None, f"{context}: {problem}"
