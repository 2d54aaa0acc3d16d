"""Date and time strings in the formats the original parses, with their boundaries and near misses.

A UDF that parses a date raises on almost every random string, so without these its comparison
would rest on the few rows that happen to parse. The formats come from the original's source:
`strptime`/`strftime` formats (any literal with two or more `%` directives), Java-style patterns
as `to_date`/`to_timestamp`/`date_format` spell them (`yyyy-MM-dd HH:mm:ss`), and dated samples
in its literals, docstrings and comments (`'2015-04-21 16:56:08 UTC'` gives `%Y-%m-%d %H:%M:%S UTC`).
A source that shows none but splits on `-`, `/` or `:` and names a date or a time gets the ISO forms.

Values fall on the boundaries a parser gets wrong: month ends, leap days and the years around
them, midnight and the last second of a day, single-digit parts written without their zero, the
first and last years a format can hold, time zones and their offsets. A share of them are near
misses: a day past its month's end, a 24th hour, a part left out, a separator changed, spaces
around the value.
"""

from __future__ import annotations

import ast
import calendar
import io
import random
import re
import tokenize

DIRECTIVE = re.compile(r"%[-]?[YymdHIMSfpbBaAjzZ]")  # "%%" is a percent sign, not a date part
# Java/Spark datetime patterns, longest letter runs first
JAVA_PARTS = [
    ("yyyy", "%Y"), ("yy", "%y"), ("MMMM", "%B"), ("MMM", "%b"), ("MM", "%m"), ("M", "%-m"), ("dd", "%d"), ("d", "%-d"),
    ("HH", "%H"), ("H", "%-H"), ("hh", "%I"), ("mm", "%M"), ("ss", "%S"), ("SSSSSS", "%f"), ("SSS", "%3f"), ("a", "%p"),
    ("EEEE", "%A"), ("EEE", "%a"), ("XXX", "%:z"), ("Z", "%z"), ("z", "%Z"),
]  # fmt: skip
JAVA_PATTERN = re.compile(r"^(?=.*yy)(?=.*(?:MM|dd|HH))[yMdHhmsSaEXZz'\s\-/:.,T]{6,40}$")
SAMPLE = re.compile(
    r"(?P<date>(?P<Y>\d{4})(?P<s1>[-/.])(?P<m>\d{1,2})(?P=s1)(?P<d>\d{1,2})|(?P<d2>\d{1,2})(?P<s2>[-/.])(?P<m2>\d{1,2})(?P=s2)(?P<Y2>\d{4}))"
    r"(?:(?P<t>[ T])(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?P<f>\.\d{1,6})?)?)?"
    r"(?P<zone>\s?(?:UTC|GMT|Z|[+-]\d{2}:?\d{2}))?"
)
DATE_WORDS = re.compile(r"\b(?:dates?|times?|days?|months?|years?|hours?|timestamps?|strptime|datetime)\b", re.IGNORECASE)
SPLIT_ON = re.compile(r"""\.r?split\(\s*['"]([-/:T ])['"]""")
ISO_FORMATS = ["%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%H:%M:%S", "%Y/%m/%d"]
MAX_FORMATS = 12
NEAR_MISS_RATE = 0.15
ZONES = ["UTC", "GMT", "EST", "CET", "PST", "Z"]
OFFSETS = ["+0000", "-0000", "+0530", "-0800", "+1400", "-1200", "+0100"]


def mine_formats(source: str) -> list[str]:
    """The date formats `source` spells or shows by example, as strftime formats, in first-seen order."""
    found: dict[str, None] = {}
    texts = _literals(source) + _comments(source)
    for text in texts:
        if len(DIRECTIVE.findall(text)) >= 2 and len(text) <= 60:
            found[text] = None
        elif JAVA_PATTERN.match(text.strip()):
            found[_from_java(text.strip())] = None
        for match in SAMPLE.finditer(text):
            found[_from_sample(match)] = None
    splits = set(SPLIT_ON.findall(source))
    if not found and splits and DATE_WORDS.search(source):
        for iso in ISO_FORMATS:
            if any(separator in iso for separator in splits):
                found[iso] = None
    return list(found)[:MAX_FORMATS]


def date_string(formats: list[str], rng: random.Random) -> str:
    """A value in one of `formats`: a valid one on a boundary, or now and then a near miss."""
    fmt = rng.choice(formats)
    fields = _fields(rng)
    text = render(fmt, fields, unpadded=rng.random() < 0.2)
    if rng.random() < NEAR_MISS_RATE:
        return _near_miss(fmt, fields, text, rng)
    return text


def render(fmt: str, fields: dict[str, int], unpadded: bool = False) -> str:
    """`fmt` filled from `fields` (year, month, day, hour, minute, second, micro, zone, offset), as strftime writes it.

    `unpadded` writes single-digit parts without their zero, which strptime also reads."""
    year, month, day = fields["year"], fields["month"], fields["day"]
    hour = fields["hour"]
    pad = (lambda n: str(n)) if unpadded else (lambda n: f"{n:02d}")
    weekday = calendar.weekday(year, month, day) if _valid(year, month, day) else 0
    values = {
        "Y": f"{year:04d}", "y": f"{year % 100:02d}", "m": pad(month), "-m": str(month), "d": pad(day), "-d": str(day),
        "H": pad(hour), "-H": str(hour), "I": pad((hour % 12) or 12), "-I": str((hour % 12) or 12), "M": pad(fields["minute"]),
        "-M": str(fields["minute"]), "S": pad(fields["second"]), "-S": str(fields["second"]), "-y": str(year % 100), "-j": str(_day_of_year(year, month, day)),
        "f": f"{fields['micro']:06d}", "3f": f"{fields['micro'] // 1000:03d}", "p": "AM" if hour < 12 else "PM",
        "b": calendar.month_abbr[month] if 1 <= month <= 12 else "Foo", "B": calendar.month_name[month] if 1 <= month <= 12 else "Smarch",
        "a": calendar.day_abbr[weekday], "A": calendar.day_name[weekday],
        "j": f"{_day_of_year(year, month, day):03d}", "Z": ZONES[fields["zone"] % len(ZONES)],
        "z": OFFSETS[fields["offset"] % len(OFFSETS)], ":z": _colon(OFFSETS[fields["offset"] % len(OFFSETS)]), "%": "%",
    }  # fmt: skip
    return re.sub(r"%(3f|:z|-[mdHIMSyj]|[YymdHIMSfpbBaAjzZ%])", lambda m: values[m.group(1)], fmt)


def _fields(rng: random.Random) -> dict[str, int]:
    roll = rng.random()
    if roll < 0.25:  # a month's end, a leap day or the day after
        year = rng.choice([1900, 1999, 2000, 2004, 2019, 2020, 2021, 2023, 2024, 2100])
        month = rng.randint(1, 12)
        day = calendar.monthrange(year, month)[1] - rng.choice([0, 0, 1])
    elif roll < 0.35:  # the first and last days of a year, and the ends of what a format can hold
        year, month, day = rng.choice([(1970, 1, 1), (1969, 12, 31), (2000, 1, 1), (1999, 12, 31), (1, 1, 1), (9999, 12, 31), (1900, 1, 1), (2038, 1, 19)])
    else:
        year = rng.choice([rng.randint(1950, 2035), rng.randint(1950, 2035), rng.randint(1, 9999)])
        month = rng.randint(1, 12)
        day = rng.randint(1, calendar.monthrange(year, month)[1])
    clock = rng.random()
    if clock < 0.15:
        hour, minute, second = 0, 0, 0
    elif clock < 0.25:
        hour, minute, second = 23, 59, 59
    elif clock < 0.35:
        hour, minute, second = rng.choice([(12, 0, 0), (11, 59, 59), (1, 2, 3), (9, 5, 7)])
    else:
        hour, minute, second = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    micro = rng.choice([0, 0, 999_999, 500_000, rng.randint(0, 999_999)])
    return {"year": year, "month": month, "day": day, "hour": hour, "minute": minute, "second": second, "micro": micro, "zone": rng.randrange(60), "offset": rng.randrange(70)}


def _near_miss(fmt: str, fields: dict[str, int], text: str, rng: random.Random) -> str:
    roll = rng.random()
    changed = dict(fields)
    if roll < 0.45:  # one part past its range
        part, value = rng.choice([("day", calendar.monthrange(fields["year"], fields["month"])[1] + 1), ("day", 0), ("month", 13), ("month", 0), ("hour", 24), ("minute", 60), ("second", 61)])
        if part == "month":
            changed["day"] = min(changed["day"], 28)
        changed[part] = value
        return render(fmt, changed)
    if roll < 0.6 and len(text) > 2:  # the last part left out
        cut = max((text.rfind(ch) for ch in "-/: T."), default=-1)
        return text[:cut] if cut > 0 else text[:-1]
    if roll < 0.75:  # a separator changed
        separators = [ch for ch in text if ch in "-/:. T"]
        if separators:
            old = rng.choice(separators)
            return text.replace(old, rng.choice([s for s in "-/:. " if s != old]), 1)
    if roll < 0.9:
        space = rng.choice([" ", "\t", "\u00a0"])
        return rng.choice([space + text, text + space])
    return text + rng.choice(["Z", " ", "x", ".0", "0"])


def _literals(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= 2000]


def _comments(source: str) -> list[str]:
    try:
        return [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return []


def _from_java(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.find("'", i + 1)
            end = len(pattern) if end < 0 else end
            out.append(pattern[i + 1 : end].replace("%", "%%"))
            i = end + 1
            continue
        for letters, directive in JAVA_PARTS:
            if pattern.startswith(letters, i):
                out.append(directive)
                i += len(letters)
                break
        else:
            out.append("%%" if pattern[i] == "%" else pattern[i])
            i += 1
    return "".join(out)


def _from_sample(match: re.Match) -> str:
    parts = match.groupdict()
    if parts["Y"]:
        fmt = f"%Y{parts['s1']}%m{parts['s1']}%d"
    else:
        # 21/04/2015 reads as day first where the first part cannot be a month, else month first (as the US writes it)
        day_first = int(parts["d2"]) > 12
        fmt = f"%d{parts['s2']}%m{parts['s2']}%Y" if day_first else f"%m{parts['s2']}%d{parts['s2']}%Y"
    if parts["H"]:
        fmt += f"{parts['t']}%H:%M" + (":%S" if parts["S"] else "") + (".%f" if parts["f"] else "")
    zone = parts["zone"]
    if zone:
        bare = zone.strip()
        written = bare if bare in ("UTC", "GMT", "Z") else "%z"
        fmt += zone[: len(zone) - len(bare)] + written
    return fmt


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(max(1, year), month)[1]


def _day_of_year(year: int, month: int, day: int) -> int:
    if not _valid(year, month, day):
        return 366 if day > 28 else 0
    return sum(calendar.monthrange(year, m)[1] for m in range(1, month)) + day


def _colon(offset: str) -> str:
    return f"{offset[:3]}:{offset[3:]}"
