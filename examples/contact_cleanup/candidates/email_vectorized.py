"""Vectorised (pandas) equivalent of ``_normalize_email`` / ``normalize_email``.

Run by the harness as ``F.pandas_udf(evaluate, "string")`` on the ``raw``
column.  Every step is a whole-column pandas ``.str`` operation.
"""

import re

import pandas as pd

TARGET = "vectorized"

# Same pattern and flags as job.py: Python `re` with IGNORECASE, which
# also matches e.g. "MAİLTO:" (U+0130) and "maılto:" (dotless i, U+0131).
_MAILTO_PREFIX = re.compile(r"^mailto:", re.IGNORECASE)
_GMAIL_DOMAINS = ["gmail.com", "googlemail.com"]
_CANONICAL_GMAIL = "gmail.com"

# Spark hands string columns to pandas UDFs as pandas 3's default "str"
# dtype, which is backed by pyarrow.  Its .str.lower() uses utf8proc simple
# case mapping ("İ" -> "i") whereas Python's str.lower() gives "i̇" (two code
# points).  The python-storage StringDtype runs the actual Python str methods
# on every element, so strip()/lower() behave exactly like the UDF.
_PY_STRINGS = pd.StringDtype("python")


def evaluate(raw: pd.Series) -> pd.Series:
    s = raw.astype(_PY_STRINGS)

    # raw.strip() -> drop "mailto:" -> lower()
    email = s.str.strip().str.replace(_MAILTO_PREFIX, "", regex=True).str.lower()

    # `email.count("@") != 1 -> None`; when there is exactly one "@",
    # partition() splits exactly like email.split("@").
    one_at = email.str.count("@").eq(1).fillna(False).astype(bool)
    parts = email.str.partition("@")
    local, domain = parts[0], parts[2]

    # Gmail: keep the part before the first "+", drop dots, alias the domain.
    is_gmail = domain.isin(_GMAIL_DOMAINS).fillna(False).astype(bool)
    gmail_local = local.str.partition("+")[0].str.replace(".", "", regex=False)
    local = local.mask(is_gmail, gmail_local)
    domain = domain.mask(is_gmail, _CANONICAL_GMAIL)

    # Empty local part or domain (after the Gmail clean-up) -> None.
    non_empty = (local.str.len().gt(0) & domain.str.len().gt(0)).fillna(False).astype(bool)

    result = local.str.cat(domain, sep="@")
    # Rows that fail either check become <NA>, which Spark receives as null.
    return result.where(one_at & non_empty)
