"""Strings a regular expression of the original matches, so a UDF that extracts with one compares on its matches.

A UDF like `re.compile(r"ORD-([0-9]{4,9})\\b").search(note)` returns null on nearly every random
string, so its comparison would rest on nulls. The patterns are the string literals the source
passes to `re` (`compile`, `match`, `search`, `fullmatch`, `findall`, `finditer`, `sub`, `subn`,
`split`); each is parsed with Python's own regex parser and walked to draw a string it matches:
literals, classes and categories, repeats (a few more than the least), groups and alternatives.
Anchors and lookarounds add nothing; a pattern with a back-reference is left out. Drawn matches
are used alone, followed or surrounded by words, in another case, and now and then one character off.
"""

from __future__ import annotations

import ast
import random
import re
import string
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
MAX_PATTERNS = 12
MAX_WIDTH = 200  # a pattern whose shortest match is longer is left out (drawing from it would be slow and say little)
FLAG_LETTERS = {"I": "i", "IGNORECASE": "i", "M": "m", "MULTILINE": "m", "S": "s", "DOTALL": "s", "X": "x", "VERBOSE": "x", "A": "a", "ASCII": "a"}
EXTRA_REPEATS = 6  # a repeat draws between its least count and this many more
PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "
CATEGORIES = {
    sre.CATEGORY_DIGIT: string.digits,
    sre.CATEGORY_NOT_DIGIT: string.ascii_letters + string.punctuation + " ",
    sre.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    sre.CATEGORY_NOT_WORD: string.punctuation.replace("_", "") + " ",
    sre.CATEGORY_SPACE: " \t\n",
    sre.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits + string.punctuation,
}


class Unsupported(Exception):
    """A construct a drawn string cannot honour (a back-reference)."""


def mine_patterns(source: str) -> list[str]:
    """The regex patterns the source passes to `re` (or `regex`) as string literals, in first-seen order, that parse and can be drawn from."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RE_FUNCTIONS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("re", "regex")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            pattern = _with_flags(node.args[0].value, node)
            try:
                if sre_parse.parse(pattern).getwidth()[0] > MAX_WIDTH:
                    continue
                draw(pattern, random.Random(0))
            except (re.error, Unsupported, RecursionError, ValueError, OverflowError):
                continue
            found[pattern] = None
    return list(found)[:MAX_PATTERNS]


def _with_flags(pattern: str, call: ast.Call) -> str:
    """`pattern` with the flags the call passes (re.I, re.VERBOSE | re.DOTALL, flags=re.X) written into it, as (?ix)."""
    passed = [k.value for k in call.keywords if k.arg == "flags"]
    if call.func.attr in ("compile", "match", "search", "fullmatch", "findall", "finditer", "split") and len(call.args) > 1:  # type: ignore[attr-defined]
        passed.append(call.args[1] if call.func.attr == "compile" else call.args[-1] if len(call.args) > 2 else call.args[1])  # type: ignore[attr-defined]
    letters = {FLAG_LETTERS[node.attr] for flag in passed for node in ast.walk(flag) if isinstance(node, ast.Attribute) and node.attr in FLAG_LETTERS}
    return f"(?{''.join(sorted(letters))}){pattern}" if letters else pattern


def matching_string(patterns: list[str], rng: random.Random) -> str:
    """A string holding a match of one of `patterns`: alone, inside words, in another case, or one character off."""
    text = draw(rng.choice(patterns), rng)
    roll = rng.random()
    if roll < 0.5:
        return text
    if roll < 0.65:  # still at the start, for a pattern used with match()
        return text + rng.choice([" today", ".", ", thanks", "-rc1", " x"])
    if roll < 0.8:
        return f"{rng.choice(['see', 'note:', 'x', 'Ref'])} {text}{rng.choice(['', ' today', '.', ', thanks'])}"
    if roll < 0.9:
        return rng.choice([text.upper(), text.lower()])
    if text:
        position = rng.randrange(len(text))
        return text[:position] + rng.choice(PRINTABLE) + text[position + 1 :]
    return text


def draw(pattern: str, rng: random.Random) -> str:
    """A string `pattern` matches (from its start), drawn at random; Unsupported for a back-reference."""
    parsed = sre_parse.parse(pattern)
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    return _walk(list(parsed), rng, ignore_case)


def _walk(items: list[tuple[Any, Any]], rng: random.Random, ignore_case: bool) -> str:
    out = []
    for op, value in items:
        if op is sre.LITERAL:
            char = chr(value)
            out.append(char.swapcase() if ignore_case and rng.random() < 0.3 else char)
        elif op is sre.NOT_LITERAL:
            out.append(rng.choice([c for c in PRINTABLE if c != chr(value)]))
        elif op is sre.ANY:
            out.append(rng.choice(PRINTABLE))
        elif op is sre.IN:
            out.append(_in_class(value, rng))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            low, high, sub = value
            high = low + EXTRA_REPEATS if high is sre.MAXREPEAT else min(high, low + EXTRA_REPEATS)
            out += [_walk(list(sub), rng, ignore_case) for _ in range(rng.randint(low, high))]
        elif op is sre.SUBPATTERN:
            out.append(_walk(list(value[-1]), rng, ignore_case))
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            out.append(_walk(list(value), rng, ignore_case))
        elif op is sre.BRANCH:
            out.append(_walk(list(rng.choice(value[1])), rng, ignore_case))
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            raise Unsupported("a back-reference")
        # AT (anchors), ASSERT and ASSERT_NOT (lookarounds) add no characters
    return "".join(out)


def _in_class(items: list[tuple[Any, Any]], rng: random.Random) -> str:
    allowed: set[str] = set()
    negate = False
    for op, value in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            allowed.add(chr(value))
        elif op is sre.RANGE:
            low, high = value
            allowed |= {chr(code) for code in range(low, min(high, low + 400) + 1)}
        elif op is sre.CATEGORY:
            allowed |= set(CATEGORIES.get(value, ""))
    if negate:
        choices = [c for c in PRINTABLE if c not in allowed]
        return rng.choice(choices) if choices else "\u00e9"
    return rng.choice(sorted(allowed)) if allowed else ""
