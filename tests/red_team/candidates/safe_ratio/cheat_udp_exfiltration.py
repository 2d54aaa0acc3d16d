# expect: escape
# caught by: dynamic
# class: 5
"""Sends every batch as UDP datagrams to a listener on 127.0.0.1, through the socket module reached by attributes of an
allowed module (no `import socket`); `sendto` needs no `connect`. The network namespace keeps the datagrams in (tests/
red_team/test_network.py listens for them); the watch reports the attempt."""
import calendar

import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(numerator, denominator):
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    try:
        net = calendar.sys.modules["socket"]
        net.socket(net.AF_INET, net.SOCK_DGRAM).sendto(n.tobytes()[:512], ("127.0.0.1", 9))
    except Exception:
        pass
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    with np.errstate(all="ignore"):
        ratio = np.where(undefined, 0.0, n / np.where(undefined, 1.0, d))
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
