import pandas as pd

TARGET = "vectorized"

# strptime's own patterns for %Y, %m and %d (Lib/_strptime.py): \d is any Unicode digit there too
ISO_DATE = r"(?P<year>\d\d\d\d)-(?P<month>1[0-2]|0[1-9]|[1-9])-(?P<day>3[01]|[12]\d|0[1-9]|[1-9]| [1-9])"


def evaluate(text):
    parts = text.str.strip().str.extract("^" + ISO_DATE + r"\Z")
    # float columns (NaN where no date): to_datetime cannot assemble nullable integers holding NA
    numbers = {name: pd.to_numeric(parts[name].map(_ascii_digits, na_action="ignore"), errors="coerce").astype("float64") for name in ("year", "month", "day")}
    stamps = pd.to_datetime(pd.DataFrame(numbers), errors="coerce")
    return pd.Series(stamps.dt.date.where(stamps.notna(), None), dtype="object")


def _ascii_digits(text):
    return str(int(text.strip()))
