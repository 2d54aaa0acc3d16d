TARGET = "vectorized"


def evaluate(phone):
    digits = phone.str.replace(r"[^0-9+]", "", regex=True)
    return digits.mask(digits == "")
