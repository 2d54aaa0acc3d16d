"""Values cross process boundaries exactly and without pickles."""

import datetime as dt
import math
from decimal import Decimal

import pytest
from pyspark.sql import Row

from aether_mcp.judge.compare import identical
from aether_mcp.wire import value_codec
from aether_mcp.wire.value_codec import Raised


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        12345678901234567890123,
        -0.0,
        float("nan"),
        float("-inf"),
        1e-320,
        "tab\tnbsp\u00a0ideographic\u3000",
        b"\x00\xff",
        Decimal("1.50"),
        dt.date(2024, 2, 29),
        dt.datetime(1970, 1, 1, 0, 0, 0, 1),
        [1.0, None, [2.0]],
        {"a": 1, "b": None},
        Raised("ValueError", "weight must be positive"),
    ],
)
def test_values_round_trip_identically(value):
    assert identical(value, value_codec.loads(value_codec.dumps(value)))


def test_negative_zero_keeps_its_sign():
    assert math.copysign(1.0, value_codec.loads(value_codec.dumps(-0.0))) == -1.0


def test_spark_rows_become_ordered_dicts():
    decoded = value_codec.loads(value_codec.dumps(Row(lat=1.0, lon=-0.0)))
    assert list(decoded) == ["lat", "lon"]
    assert identical(decoded, {"lat": 1.0, "lon": -0.0})


def test_values_that_could_carry_code_are_refused():
    with pytest.raises(TypeError, match="cannot encode"):
        value_codec.encode(object())
