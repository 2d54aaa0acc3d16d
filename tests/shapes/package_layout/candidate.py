TARGET = "vectorized"


def evaluate(raw):
    return raw.str.strip().str.replace(r"\s+", " ", regex=True).str.title()
