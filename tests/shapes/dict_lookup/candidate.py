TARGET = "vectorized"

NAMES = dict(US="United States", GB="United Kingdom", DE="Germany", FR="France", JP="Japan", BR="Brazil")


def evaluate(code):
    names = code.str.strip().str.upper().map(NAMES).fillna("Unknown").astype("string")
    return names.mask(code.fillna("") == "")
