# expect: unequal
# caught by: comparison
# class: 10
"""The bundled careful conversion with one realistic port bug: it cuts the address at 64 characters first, the width
of the database column the old code wrote to. Right on every address of the recorded cases and on short hidden
strings; wrong where a hidden string is long and has the structure the UDF parses (an "@", a domain), which hidden
inputs now build, up to a few hundred characters."""

import re

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

TARGET = "vectorized"
_WIDTH = 64  # the width of the column this used to feed

_GMAIL_DOMAINS = pa.array(["gmail.com", "googlemail.com"])
_CANONICAL_GMAIL = "gmail.com"

# What str.strip() removes from ASCII text: every code point below 128 for
# which str.isspace() is true.  Note \x1c-\x1f: Arrow's own ASCII whitespace
# set (C isspace) lacks them, so the set is given explicitly.
_ASCII_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "

# `^([^@]*)@([^@]*)$` matches exactly when there is one "@" and splits there,
# like `count("@") == 1` followed by `split("@")`.  In RE2 a negated class
# also matches "\n", and `$` is the end of the text only, as Python's split
# needs.
_ONE_AT = r"^(?P<local>[^@]*)@(?P<domain>[^@]*)$"


def _ascii_rows(raw: pa.Array) -> pa.Array:
    """The UDF for ASCII strings, one Arrow kernel per step."""
    # raw.strip() -> drop "mailto:" (any case) -> lower().  On ASCII text the
    # IGNORECASE prefix match is a prefix match after lower-casing.
    email = pc.ascii_lower(pc.ascii_trim(raw, characters=_ASCII_WHITESPACE))
    email = pc.if_else(pc.starts_with(email, "mailto:"), pc.utf8_slice_codeunits(email, 7), email)

    # count("@") != 1 -> None (the match is null); otherwise split at the "@".
    parts = pc.extract_regex(email, _ONE_AT)
    local, domain = pc.struct_field(parts, [0]), pc.struct_field(parts, [1])

    # Gmail: keep the part before the first "+", drop dots, alias the domain.
    # (?s) lets ".*" run over newlines, as split("+", 1)[0] does.
    is_gmail = pc.is_in(domain, _GMAIL_DOMAINS)
    gmail_local = pc.replace_substring(pc.replace_substring_regex(local, r"(?s)\+.*", "", max_replacements=1), ".", "")
    local = pc.if_else(is_gmail, gmail_local, local)
    domain = pc.if_else(is_gmail, pa.scalar(_CANONICAL_GMAIL), domain)

    # Empty local part or domain (after the Gmail clean-up) -> None.
    usable = pc.and_(pc.not_equal(local, ""), pc.not_equal(domain, ""))
    return pc.if_else(usable, pc.binary_join_element_wise(local, domain, "@"), pa.scalar(None, pa.string()))


# --- exact Python semantics, for the rows that are not ASCII -----------------

# Same pattern and flags as job.py: Python `re` with IGNORECASE, which
# also matches e.g. "MAİLTO:" (U+0130) and "maılto:" (dotless i, U+0131).
_MAILTO_PREFIX = re.compile(r"^mailto:", re.IGNORECASE)

# The python-storage StringDtype runs the actual Python str methods on every
# element, so strip()/lower() behave exactly like the UDF (pyarrow's
# utf8_lower uses simple case mapping: "İ" -> "i", where Python gives "i̇").
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


def _unicode_rows(s: pd.Series) -> pd.Series:
    """The UDF for any strings, through Python's own str methods."""
    email = s.str.strip().str.replace(_MAILTO_PREFIX, "", regex=True).str.lower()
    one_at = email.str.count("@").eq(1).fillna(False).astype(bool)
    local, domain = _partition(email, "@")
    is_gmail = domain.isin(["gmail.com", "googlemail.com"]).fillna(False).astype(bool)
    gmail_local = _partition(local, "+")[0].str.replace(".", "", regex=False)
    local = local.mask(is_gmail, gmail_local)
    domain = domain.mask(is_gmail, _CANONICAL_GMAIL)
    non_empty = (local.str.len().gt(0) & domain.str.len().gt(0)).fillna(False).astype(bool)
    return local.str.cat(domain, sep="@").where(one_at & non_empty)


def evaluate(raw: pd.Series) -> pd.Series:
    s = raw.astype(_PY_STRINGS).str.slice(0, _WIDTH)
    values = pa.array(s.array, type=pa.string())
    result = _ascii_rows(values)
    unicode_rows = pc.invert(pc.fill_null(pc.string_is_ascii(values), True))
    if pc.any(unicode_rows).as_py():
        exact = _unicode_rows(s[unicode_rows.to_numpy(zero_copy_only=False)])
        result = pc.replace_with_mask(result, unicode_rows, pa.array(exact.array, type=pa.string()))
    return pd.Series(pd.arrays.ArrowStringArray(result), index=raw.index)
