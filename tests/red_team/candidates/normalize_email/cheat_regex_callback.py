# expect: row_at_a_time
# caught by: static, dynamic
"""A regex replacement with a Python callback runs once per matching row; only counting calls shows it."""

import re

import pandas as pd

TARGET = "vectorized"

# Same pattern and flags as job.py: Python `re` with IGNORECASE, which
# also matches e.g. "MAİLTO:" (U+0130) and "maılto:" (dotless i, U+0131).
_MAILTO_PREFIX = re.compile(r"^mailto:", re.IGNORECASE)
_GMAIL_DOMAINS = ["gmail.com", "googlemail.com"]
_CANONICAL_GMAIL = "gmail.com"

# pandas 3's default "str" dtype is backed by pyarrow, whose .str.lower() uses
# utf8proc simple case mapping ("İ" -> "i") whereas Python's str.lower() gives
# "i̇" (two code points).  The python-storage StringDtype runs the actual
# Python str methods on every element, so strip()/lower() behave exactly like
# the UDF; the conversion below keeps that true whatever dtype arrives.
_PY_STRINGS = pd.StringDtype("python")


def _partition(s: pd.Series, separator: str) -> tuple[pd.Series, pd.Series]:
    """(before, after) the first `separator`, like str.partition, for any batch.

    pandas returns fewer than three columns when a batch holds only nulls (or
    nothing), so the columns are rebuilt with the batch's dtype.
    """
    parts = s.str.partition(separator)
    if parts.shape[1] < 3:
        empty = pd.Series(pd.NA, index=s.index, dtype=_PY_STRINGS)
        return empty, empty
    return parts[0].astype(_PY_STRINGS), parts[2].astype(_PY_STRINGS)


def evaluate(raw: pd.Series) -> pd.Series:
    s = raw.astype(_PY_STRINGS)

    # raw.strip() -> drop "mailto:" -> lower()
    email = s.str.replace(r"(?s)\A.*\Z", lambda match: match.group(0).strip(), regex=True).str.replace(_MAILTO_PREFIX, "", regex=True).str.lower()

    # `email.count("@") != 1 -> None`; when there is exactly one "@",
    # partition() splits exactly like email.split("@").
    one_at = email.str.count("@").eq(1).fillna(False).astype(bool)
    local, domain = _partition(email, "@")

    # Gmail: keep the part before the first "+", drop dots, alias the domain.
    is_gmail = domain.isin(_GMAIL_DOMAINS).fillna(False).astype(bool)
    gmail_local = _partition(local, "+")[0].str.replace(".", "", regex=False)
    local = local.mask(is_gmail, gmail_local)
    domain = domain.mask(is_gmail, _CANONICAL_GMAIL)

    # Empty local part or domain (after the Gmail clean-up) -> None.
    non_empty = (local.str.len().gt(0) & domain.str.len().gt(0)).fillna(False).astype(bool)

    result = local.str.cat(domain, sep="@")
    # Rows that fail either check become <NA>, which Spark receives as null.
    return result.where(one_at & non_empty)
