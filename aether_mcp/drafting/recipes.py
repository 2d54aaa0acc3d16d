"""The recipes a draft uses: Python semantics written as Spark Column code, each from the notes on traps.

A draft carries the recipes it uses as plain functions at the top of its file, so it imports nothing
but `pyspark.sql.functions` and the agent can read and edit every line. The same functions are
checked against the Python they replace, through real Spark, by the suite's property tests.
"""

from __future__ import annotations

# Every character str.isspace() is true for: what str.strip() removes (notes, section 10).
PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# Every decimal digit int() reads other than 0-9, and the ASCII digit each stands for.
PY_DIGITS = "".join(chr(c) for c in range(128, 0x110000) if chr(c).isdecimal())
PY_DIGITS_ASCII = "".join(str(int(c)) for c in PY_DIGITS)

RECIPES: dict[str, str] = {
    "_col": '''
def _col(c):
    return F.col(c) if isinstance(c, str) else c
''',
    "_raise": '''
def _raise(message):
    """Fail the row, as the original raises there (any exception counts as a raise)."""
    return F.raise_error(F.lit(message))
''',
    "PY_WHITESPACE": f'''
# What str.strip() removes (Spark's trim() removes only spaces).
PY_WHITESPACE = {PY_WHITESPACE!r}
''',
    "_is_nan": '''
def _is_nan(x):
    return F.coalesce(F.isnan(x), F.lit(False))
''',
    "_lookup": '''
def _lookup(key, table):
    """table[key] for a key known to be in the literal dict `table` (the KeyError is checked before)."""
    items = list(table.items())
    out = F.when(key == F.lit(items[0][0]), F.lit(items[0][1]))
    for k, v in items[1:]:
        out = out.when(key == F.lit(k), F.lit(v))
    return out
''',
    "_py_min": '''
def _py_min(a, b):
    """Python min(a, b) of floats: b only where b < a as Python compares (NaN is never smaller)."""
    return F.when(~F.isnan(a) & ~F.isnan(b) & (b < a), b).otherwise(a)
''',
    "_py_max": '''
def _py_max(a, b):
    """Python max(a, b) of floats: b only where b > a as Python compares (Spark puts NaN above all)."""
    return F.when(~F.isnan(a) & ~F.isnan(b) & (b > a), b).otherwise(a)
''',
    "_py_int_mod": '''
def _py_int_mod(a, b):
    """Python a % b of ints (the sign of the divisor); b == 0 is a guard's (try_mod: a step runs on every row)."""
    r = F.try_mod(a, b)
    return F.when((r != 0) & ((r < 0) != (b < 0)), r + b).otherwise(r)
''',
    "_py_int_floordiv": '''
def _py_int_floordiv(a, b):
    """Python a // b of ints (rounds toward minus infinity); b != 0 is checked before."""
    r = F.try_mod(a, b)
    exact = F.try_divide((a - r).cast("decimal(20,0)"), b.cast("decimal(20,0)")).try_cast("long")  # a - r is a multiple of b; null past 64 bits
    return exact - F.when((r != 0) & ((r < 0) != (b < 0)), F.lit(1)).otherwise(F.lit(0))
''',
    "_py_float_mod": '''
def _py_float_mod(x, y):
    """Python x % y of floats (the sign of the divisor, copysign(0, y) for a zero); y != 0 is checked before."""
    m = F.try_mod(x, y)
    adj = F.when((m != 0) & ((y < 0) != (m < 0)), m + y).otherwise(m)
    return F.when(m == 0, F.lit(0.0) * F.signum(y)).otherwise(adj)
''',
    "_py_float_floordiv": '''
def _py_float_floordiv(x, y):
    """CPython's float floor division; y != 0 is checked before."""
    m = F.try_mod(x, y)
    div0 = F.try_divide(x - m, y)
    div = F.when((m != 0) & ((y < 0) != (m < 0)), div0 - 1.0).otherwise(div0)
    r = F.rint(div)
    fl = F.when(r > div, r - 1.0).otherwise(r)
    fl = F.when(div - fl > 0.5, fl + 1.0).otherwise(fl)
    return F.when(div == 0, F.lit(0.0) * F.signum(F.try_divide(x, y))).otherwise(fl)
''',
    "_py_round": '''
def _py_round(x, n):
    """Python round(x, n) of a float for 0 <= n <= 22: half to even on the exact binary value.

    c = x * 10**n is rounded to a double; its exact error e (Dekker's two-product) decides the ties.
    """
    p = 10.0 ** n
    ph = 134217729.0 * p - (134217729.0 * p - p)
    pl = p - ph
    t = F.lit(134217729.0) * x
    xh = t - (t - x)
    xl = x - xh
    c = x * F.lit(p)
    e = ((xh * F.lit(ph) - c) + xh * F.lit(pl) + xl * F.lit(ph)) + xl * F.lit(pl)
    r = F.rint(c)
    tie = F.abs(c - r) == 0.5
    k = (
        F.when(tie & (e < 0), c - 0.5)
        .when(tie & (e > 0), c + 0.5)
        .when((F.abs(c) >= 2.0 ** 52) & (F.abs(e) == 0.5) & (c % 2.0 != 0.0), c + F.signum(e))
        .otherwise(r)
    )
    return F.when(F.isnan(c) | (F.abs(c) >= 2.0 ** 53), x).otherwise(k / F.lit(p))
''',
    "_half_up": '''
def _half_up(x, n):
    """float(Decimal(repr(x)).quantize(Decimal(10) ** -n, ROUND_HALF_UP)) for a finite or NaN x.

    Spark's round() rounds the decimal string half up, as Decimal does; only the sign of a zero
    result is lost there, so it is put back from x (copysign(0, x)).
    """
    r = F.round(x, n)
    return F.when(r == 0, F.lit(0.0) * F.signum(x)).otherwise(r)
''',
    "PY_DIGITS": f'''
# Every decimal digit Python's int() reads other than 0-9, and the ASCII digit each stands for.
PY_DIGITS = {PY_DIGITS!r}
PY_DIGITS_ASCII = {PY_DIGITS_ASCII!r}
''',
    "_strptime_fields": '''
def _strptime_fields(s, pattern, ascii_pattern, groups):
    """The fields datetime.strptime(s, format) reads, as "Y,m,d,H,M,S" in ASCII digits; null where the format's regex does not match all of s.

    `pattern` is the regex Python's _strptime builds for the format, rewritten for Java; `ascii_pattern` the same for
    ASCII text (each class's ASCII members), taken where s is ASCII; `groups` gives each directive's group. Python takes
    the first match its engine finds and raises where it does not span the string; a field's digits may be any Unicode
    decimal digits. One regexp_replace writes the fields and leaves what follows the match: "Y,m,d,H,M,S;rest".
    """
    fields = ",".join(f"${groups[name]}" if name in groups else "" for name in "YmdHMS") + ";"

    def scan(p):
        anchored = "\\\\A(?:" + p + ")"
        return F.when(s.rlike(anchored), F.regexp_replace(s, anchored, fields))

    out = F.when(F.length(s) == F.octet_length(s), scan(ascii_pattern)).otherwise(scan(pattern))
    head = F.substring_index(out, ";", 1)  # the fields hold digits and spaces only
    return F.when(F.length(out) == F.length(head) + 1, F.translate(head, PY_DIGITS, PY_DIGITS_ASCII))
''',
    "_strptime": '''
def _strptime(fields):
    """The wall time _strptime_fields' fields give, as a timestamp_ntz; null where Python raises ValueError (no match, year 0,
    a day past the month's end, a second of 60 or 61). A field the format lacks is Python's default (1900-01-01 00:00:00)."""
    parts = F.split(fields, ",", -1)

    def part(index, default):
        value = F.trim(F.try_element_at(parts, F.lit(index + 1)))
        return F.when(value == "", F.lit(default)).otherwise(value.try_cast("int"))

    y, m, d, hh, mm, ss = (part(i, v) for i, v in enumerate((1900, 1, 1, 0, 0, 0)))
    last = F.dayofmonth(F.last_day(F.make_date(F.greatest(y, F.lit(1)), m, F.lit(1))))
    valid = (y >= 1) & (d <= last) & (ss <= 59)
    return F.when(valid, F.make_timestamp_ntz(y, m, d, hh, mm, ss))
''',
    "_wrap_int": '''
def _wrap_int(v):
    """A bigint as a pickled UDF's int result lands in an int column: wrapped to 32 bits."""
    w = F.pmod(v, F.lit(4294967296))
    return F.when(w >= 2147483648, w - 4294967296).otherwise(w)
''',
    "_py_slice": '''
def _py_slice(s, a, b):
    """s[a:b] for int literals a, b (None for an open end), clamped as Python clamps."""
    n = F.length(s)
    st = F.lit(0) if a is None else F.greatest(F.least(F.lit(a) if a >= 0 else n + a, n), F.lit(0))
    en = n if b is None else F.greatest(F.least(F.lit(b) if b >= 0 else n + b, n), F.lit(0))
    return s.substr(st + 1, F.greatest(en - st, F.lit(0)))
''',
}


def source_of(names: list[str]) -> str:
    """The recipes' code in a fixed order, each once."""
    return "\n".join(RECIPES[name] for name in RECIPES if name in names)
