"""The same parse per value: strptime's rules (one-digit fields, the literal ' UTC') are what must match."""

from datetime import datetime

import pandas as pd

TARGET = "vectorized"
LOG_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def evaluate(created_at):
    hours = [None if value is None or value is pd.NA else datetime.strptime(value, LOG_FORMAT).hour for value in created_at]
    return pd.Series(pd.array(hours, dtype="Int32"))
