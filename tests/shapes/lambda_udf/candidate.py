TARGET = "vectorized"


def evaluate(s):
    cleaned = s.str.strip().str.lower()
    return cleaned.mask(s.fillna("") == "")
