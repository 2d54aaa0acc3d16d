"""Regular expressions a draft hands to Java's engine: Python's pattern, read by Python's own parser, rewritten construct by construct.

Both engines backtrack alike (the leftmost match, greedy, lazy and possessive repeats, alternatives
tried in order), so a pattern made only of the constructs below finds the same matches, with the
same groups, in both. Each construct is written so that it means in Java what it means in Python:
every character as a `\\x{...}` code point (no Java metacharacter can slip through), `.` as "not
`\\n`" (Java's also stops at `\\r`, `\\u0085`, `\\u2028` and `\\u2029`), `$` as "at the end or
before a final `\\n`" (Java's also before a final `\\r\\n` or other line ends), and `\\d`, `\\s` as
the exact code points Python's Unicode classes hold (Java's are ASCII). What has no exact
counterpart is refused, naming the construct: IGNORECASE and MULTILINE, `\\w` and `\\b` on Unicode
text, back-references, lookbehinds and scoped flags.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

from aether_mcp.drafting.values import Refused

FLAG_NAMES = {"I": "IGNORECASE", "IGNORECASE": "IGNORECASE", "M": "MULTILINE", "MULTILINE": "MULTILINE", "S": "DOTALL", "DOTALL": "DOTALL",
              "X": "VERBOSE", "VERBOSE": "VERBOSE", "A": "ASCII", "ASCII": "ASCII", "U": "UNICODE", "UNICODE": "UNICODE", "L": "LOCALE", "LOCALE": "LOCALE"}  # fmt: skip
REFUSED_FLAGS = {re.IGNORECASE: "IGNORECASE (Python folds case by its own Unicode tables, Java by others)", re.MULTILINE: "MULTILINE", re.LOCALE: "LOCALE"}
ASCII_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
NOTHING = "[^\\x{0}-\\x{10ffff}]"  # a class no character is in
MAX_COUNT = 1000  # a repeat count above it is refused (Java unrolls nothing, but such a pattern is rarely what a UDF means)


def flags_of(names: list[str], line: int) -> int:
    """re.ASCII | re.VERBOSE ... from the flag names a call spells."""
    value = 0
    for name in names:
        if name not in FLAG_NAMES:
            raise Refused(f"the regex flag `{name}`", line)
        value |= getattr(re, FLAG_NAMES[name])
    return value


def java_pattern(
    pattern: str, flags: int, line: int, *, may_match_empty: bool = True, class_escapes: bool = True, fold_literals: bool = False, ascii_text: bool = False
) -> str:
    """Java regex source that matches where `re.compile(pattern, flags)` matches, with the same groups; Refused otherwise.

    `ascii_text`: the pattern only ever meets ASCII text, so each class keeps only its ASCII members (the same matches there, and faster)."""
    try:
        parsed = sre_parse.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise Refused(f"the pattern {pattern!r}, which Python refuses to compile ({exc})", line) from None
    final = parsed.state.flags
    for flag, name in REFUSED_FLAGS.items():
        if final & flag and not (flag == re.IGNORECASE and fold_literals):
            raise Refused(f"the pattern {pattern!r} under {name}", line)
    if parsed.getwidth()[0] == 0 and re.search(r"\\B", pattern):
        # Java's find() tries the middle of a surrogate pair, where \B holds, and Python 3.11's \B never matches ''
        raise Refused(f"\\B in the pattern {pattern!r}, which can match the empty string", line)
    if not may_match_empty and parsed.getwidth()[0] == 0:
        raise Refused(f"re.sub with the pattern {pattern!r}, which can match the empty string (Python and Java place empty matches differently)", line)
    writer = _Writer(pattern, line, ascii=bool(final & re.ASCII), dotall=bool(final & re.DOTALL), class_escapes=class_escapes)
    writer.fold = bool(final & re.IGNORECASE)  # only where asked for: each cased literal becomes the class of what it matches
    writer.ascii_text = ascii_text
    return writer.sequence(parsed)


def java_replacement(replacement: str, line: int) -> str:
    """A literal re.sub replacement as Java's replaceAll reads it ('$' and '\\' are special there)."""
    if "\\" in replacement:
        raise Refused(f"a re.sub replacement with a backslash ({replacement!r}: group references and escapes are read differently in Java)", line)
    return replacement.replace("$", "\\$")


class _Writer:
    def __init__(self, pattern: str, line: int, *, ascii: bool, dotall: bool, class_escapes: bool) -> None:
        self.pattern, self.line, self.ascii, self.dotall, self.class_escapes = pattern, line, ascii, dotall, class_escapes
        self.fold = False
        self.ascii_text = False

    def refuse(self, what: str) -> Refused:
        return Refused(f"{what} in the pattern {self.pattern!r}", self.line, "write the match by hand, or pick the vectorized target")

    def sequence(self, items) -> str:
        return "".join(self.item(op, av) for op, av in items)

    def item(self, op, av) -> str:
        if op is sre.LITERAL:
            return self.literal(av)
        if op is sre.NOT_LITERAL:
            if self.fold and _cased(av):
                raise self.refuse("a negated cased character under IGNORECASE")
            return f"[^{_char(av)}]"
        if op is sre.ANY:
            return "[\\x{0}-\\x{10ffff}]" if self.dotall else "[^\\x{a}]"  # Java's `.` also stops at \r, \u0085, \u2028, \u2029
        if op is sre.IN:
            return self.char_class(av)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, inner = av
            if low > MAX_COUNT or (high != sre.MAXREPEAT and high > MAX_COUNT):
                raise self.refuse(f"a repeat count over {MAX_COUNT}")
            body = self.sequence(inner)
            if len(inner) != 1 or inner[0][0] not in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.SUBPATTERN, sre.ATOMIC_GROUP):
                body = f"(?:{body})"  # one character or one group repeats as it is; anything longer as a group
            count = f"{{{low},}}" if high == sre.MAXREPEAT else f"{{{low},{high}}}"
            return body + count + {sre.MAX_REPEAT: "", sre.MIN_REPEAT: "?", sre.POSSESSIVE_REPEAT: "+"}[op]
        if op is sre.SUBPATTERN:
            group, add_flags, del_flags, inner = av
            if add_flags or del_flags:
                raise self.refuse("a group with its own flags")
            body = self.sequence(inner)
            return f"({body})" if group is not None else f"(?:{body})"
        if op is sre.ATOMIC_GROUP:
            return f"(?>{self.sequence(av)})"
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.sequence(alt) for alt in av[1]) + ")"
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            direction, inner = av
            if direction != 1:
                raise self.refuse("a lookbehind")
            return f"(?{'=' if op is sre.ASSERT else '!'}{self.sequence(inner)})"
        if op is sre.AT:
            return self.anchor(av)
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            raise self.refuse("a back-reference")
        raise self.refuse(f"the construct {op}")

    def literal(self, code: int) -> str:
        if not (self.fold and _cased(code)):
            return _char(code)
        char = chr(code)
        # under re.ASCII only ASCII letters fold, and only to each other; on ASCII text only ASCII variants can occur
        variants = ({char.lower(), char.upper()} if char.isascii() else {char}) if self.ascii else set(_case_variants(char))
        kept = sorted(c for c in variants if c.isascii() or not self.ascii_text)
        return "[" + "".join(_char(ord(c)) for c in kept) + "]" if kept else NOTHING  # no ASCII character matches it

    def anchor(self, at) -> str:
        if at in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING):
            return "\\A"
        if at is sre.AT_END:
            return "(?=\\x{a}?\\z)"  # Python's $: at the end, or before a final \n only
        if at is sre.AT_END_STRING:
            return "\\z"
        if at in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY):
            if not self.ascii:
                raise self.refuse("\\b or \\B on Unicode text (Python's word characters are every Unicode letter and digit)")
            word = _ranges(ASCII_WORD)
            boundary = f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
            return boundary if at is sre.AT_BOUNDARY else f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
        raise self.refuse(f"the anchor {at}")

    def char_class(self, items) -> str:
        negate = False
        parts: list[str] = []
        for op, av in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                folded = self.literal(av)
                parts.append("" if folded == NOTHING else folded[1:-1] if folded.startswith("[") else folded)
            elif op is sre.RANGE:
                if self.fold and any(_cased(c) for c in range(av[0], av[1] + 1)):
                    raise self.refuse("a range of cased characters under IGNORECASE")
                parts.append(f"{_char(av[0])}-{_char(av[1])}")
            elif op is sre.CATEGORY:
                spans = self.category(av)
                if spans is None:
                    if len(items) != 1:
                        raise self.refuse("a negated class escape (\\D, \\S, \\W) inside [...]")
                    return "[^" + _ranges(self.category(_OPPOSITE[av]))[1:]  # type: ignore[arg-type]
                parts.append(_ranges(spans)[1:-1])
            else:
                raise self.refuse(f"the class item {op}")
        return ("[^" if negate else "[") + "".join(parts) + "]"

    def category(self, code) -> list[tuple[int, int]] | None:
        """The code points of \\d, \\s or \\w as Python reads them; None for a negated one."""
        if not self.class_escapes:
            raise self.refuse("a class escape (\\d, \\s, \\w) where the job may import the `regex` module, which reads them by other tables")
        if code in (sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_SPACE, sre.CATEGORY_NOT_WORD):
            return None
        if code is sre.CATEGORY_DIGIT:
            return [(0x30, 0x39)] if self.ascii or self.ascii_text else _spans("decimal")
        if code is sre.CATEGORY_SPACE:
            return [(0x09, 0x0D), (0x20, 0x20)] if self.ascii else [(a, b) for a, b in _spans("space") if b < 0x80] if self.ascii_text else _spans("space")
        if code is sre.CATEGORY_WORD:
            if not self.ascii:
                raise self.refuse("\\w on Unicode text (Python's word characters are every Unicode letter and digit)")
            return ASCII_WORD
        raise self.refuse(f"the class escape {code}")


_OPPOSITE = {sre.CATEGORY_NOT_DIGIT: sre.CATEGORY_DIGIT, sre.CATEGORY_NOT_SPACE: sre.CATEGORY_SPACE, sre.CATEGORY_NOT_WORD: sre.CATEGORY_WORD}


def _char(code: int) -> str:
    c = chr(code)
    return c if c.isascii() and c.isalnum() else f"\\x{{{code:x}}}"


def _ranges(spans: list[tuple[int, int]]) -> str:
    return "[" + "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in spans) + "]"


@cache
def _spans(which: str) -> list[tuple[int, int]]:
    """The code points str.isdecimal() (what \\d matches) or str.isspace() (\\s) holds, as ranges."""
    test = str.isdecimal if which == "decimal" else str.isspace
    spans: list[tuple[int, int]] = []
    start = None
    for code in range(sys.maxunicode + 2):
        inside = code <= sys.maxunicode and test(chr(code))
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            spans.append((start, code - 1))
            start = None
    return spans


def _cased(code: int) -> bool:
    c = chr(code)
    return c.lower() != c or c.upper() != c or len(_case_variants(c)) > 1


@cache
def _case_variants(char: str) -> str:
    """Every character Python's engine matches to `char` under IGNORECASE (Kelvin's K for k, long s for s ...)."""
    return "".join(re.findall(re.escape(char), _every_character(), re.IGNORECASE))


@cache
def _every_character() -> str:
    return "".join(map(chr, range(sys.maxunicode + 1)))
