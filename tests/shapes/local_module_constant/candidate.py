TARGET = "vectorized"


def evaluate(text):
    return text.str.replace(r"[$,]", "", regex=True)
