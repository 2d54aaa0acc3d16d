TARGET = "vectorized"


def evaluate(first, last):
    joined = (first.fillna("").str.strip() + " " + last.fillna("").str.strip()).str.strip()
    return joined.mask(joined == "")
