TARGET = "vectorized"


def evaluate(s):
    if s.isna().any():
        # the original reaches unicode() on null, which Python 3 does not define
        raise NameError("name 'unicode' is not defined")
    return s.str.upper()
