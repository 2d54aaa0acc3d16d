"""The comparator: null, NaN, signed zero and type aware, bit exact for floats."""

from decimal import Decimal

import pytest

from aether_mcp.judge.compare import difference, identical, ulp_distance
from aether_mcp.wire.value_codec import Raised


@pytest.mark.parametrize(
    "expected, actual",
    [(None, None), (float("nan"), float("nan")), (1.5, 1.5), ("a", "a"), ([None, 1.0], [None, 1.0]), (Decimal("1.50"), Decimal("1.50"))],
)
def test_identical_values(expected, actual):
    assert difference(expected, actual) is None


@pytest.mark.parametrize(
    "expected, actual, kind",
    [
        (None, 0.0, "null vs value"),
        (float("nan"), None, "null vs value"),
        (float("nan"), 1.0, "NaN"),
        (0.0, -0.0, "sign of zero"),
        (1, 1.0, "type"),
        (True, 1, "type"),
        (0.1 + 0.2, 0.3, "1 ULP apart"),
        (float("inf"), float("-inf"), "value"),
        (Decimal("1.5"), Decimal("1.50"), "value"),
        ("gold", "gold ", "value"),
        ([1.0, 2.0], [1.0], "length"),
        ([1.0, 2.0], [1.0, -2.0], "at [1]"),
        (Raised("ValueError", ""), None, "exception"),
    ],
)
def test_differences_are_found_and_named(expected, actual, kind):
    found = difference(expected, actual)
    assert found is not None and kind in found


def test_raised_values_match_on_exception_type():
    assert identical(Raised("ValueError", "a"), Raised("ValueError", "b"))
    assert not identical(Raised("ValueError", "a"), Raised("TypeError", "a"))


def test_ulp_distance_counts_representable_doubles():
    assert ulp_distance(1.0, 1.0) == 0
    assert ulp_distance(1.0, 1.0000000000000002) == 1
    assert ulp_distance(-0.0, 0.0) == 0
    assert ulp_distance(-5e-324, 5e-324) == 2


def test_a_declared_ulp_tolerance_accepts_only_that_many_ulps():
    import math

    near = math.nextafter(math.nextafter(1.0, 2.0), 2.0)
    assert difference(1.0, near, ulp_tolerance=2) is None
    assert "2 ULP apart" in difference(1.0, near, ulp_tolerance=1)
    assert difference(float("nan"), 1.0, ulp_tolerance=10**6) is not None
    assert difference(0.0, -0.0, ulp_tolerance=10**6) is not None


def test_a_float_result_is_measured_in_single_precision_ulps():
    import struct

    from pyspark.sql import types as T

    from aether_mcp.judge.compare import classify

    one = struct.unpack("<f", struct.pack("<f", 1.1))[0]
    next_float = struct.unpack("<f", struct.pack("<i", struct.unpack("<i", struct.pack("<f", one))[0] + 1))[0]
    found = classify(one, next_float, data_type=T.FloatType())
    assert found.ulp == 1 and "(1 float32 ULP apart)" in found.detail
    assert classify(one, next_float).ulp == 2**29  # the same two values counted as doubles
    assert classify(one, next_float, ulp_tolerance=1, data_type=T.FloatType()) is None
    assert classify(one, next_float, ulp_tolerance=1) is not None  # a double tolerance of 1 stays strict
    nested = T.StructType([T.StructField("lo", T.DoubleType()), T.StructField("hi", T.ArrayType(T.FloatType()))])
    assert classify({"lo": 0.0, "hi": [one]}, {"lo": 0.0, "hi": [next_float]}, data_type=nested).ulp == 1
    assert classify({"k": one}, {"k": next_float}, data_type=T.MapType(T.StringType(), T.FloatType())).ulp == 1
    assert classify({"lo": one, "hi": []}, {"lo": next_float, "hi": []}, data_type=nested).ulp == 2**29  # the double field
