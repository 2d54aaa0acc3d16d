TARGET = "vectorized"


def evaluate(address):
    return address.str.strip().str.lower().str.fullmatch(r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}").astype("boolean")
