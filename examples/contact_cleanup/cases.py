"""Pinned behaviour of normalize_email(raw).

`args` are in UDF argument order; `expected` is what Spark returned for
the original UDF after collect() (float for double, None for null).
Spark schema: raw string.
"""

CASES = [
    {
        "args": ["Jane.Doe@Example.com"],
        "expected": "jane.doe@example.com",
        "why": "lower-cased, dots kept outside Gmail",
    },
    {
        "args": ["  jane@example.com\t"],
        "expected": "jane@example.com",
        "why": "surrounding whitespace stripped",
    },
    {
        "args": ["\xa0jane@example.com\u2003"],
        "expected": "jane@example.com",
        "why": "Unicode whitespace (NBSP, em space) stripped by str.strip()",
    },
    {
        "args": ["\u200bjane@example.com"],
        "expected": "\u200bjane@example.com",
        "why": "zero-width space is not whitespace: kept",
    },
    {
        "args": ["mailto:jane@example.com"],
        "expected": "jane@example.com",
        "why": "mailto: prefix dropped",
    },
    {
        "args": ["MAILTO:Jane@Example.com"],
        "expected": "jane@example.com",
        "why": "mailto: match is case-insensitive",
    },
    {
        "args": ["MA\u0130LTO:jane@example.com"],
        "expected": "jane@example.com",
        "why": "re.IGNORECASE also matches U+0130 for 'i'",
    },
    {
        "args": [" mailto:jane@example.com"],
        "expected": "jane@example.com",
        "why": "strip happens before the prefix is removed",
    },
    {
        "args": ["mailto: jane@example.com"],
        "expected": " jane@example.com",
        "why": "space after the prefix is kept (not stripped again)",
    },
    {
        "args": ["J.a.n.e+news@GoogleMail.com"],
        "expected": "jane@gmail.com",
        "why": "googlemail -> gmail, +tag and dots removed",
    },
    {
        "args": ["jane.doe+a+b@gmail.com"],
        "expected": "janedoe@gmail.com",
        "why": "only the first + starts the tag",
    },
    {
        "args": ["jane.doe+x@example.com"],
        "expected": "jane.doe+x@example.com",
        "why": "+tag kept outside Gmail",
    },
    {
        "args": ["+news@gmail.com"],
        "expected": None,
        "why": "Gmail local part empty after dropping the tag -> null",
    },
    {
        "args": ["jane@gmail.com."],
        "expected": "jane@gmail.com.",
        "why": "trailing dot: not the gmail.com domain",
    },
    {
        "args": ["jane@@example.com"],
        "expected": None,
        "why": "two @ -> null",
    },
    {
        "args": ["jane.example.com"],
        "expected": None,
        "why": "no @ -> null",
    },
    {
        "args": ["@example.com"],
        "expected": None,
        "why": "empty local part -> null",
    },
    {
        "args": ["jane@"],
        "expected": None,
        "why": "empty domain -> null",
    },
    {
        "args": [""],
        "expected": None,
        "why": "empty string -> null",
    },
    {
        "args": ["   "],
        "expected": None,
        "why": "only whitespace -> null",
    },
    {
        "args": [None],
        "expected": None,
        "why": "null -> null",
    },
    {
        "args": ["\u0130smail@example.com"],
        "expected": "i\u0307smail@example.com",
        "why": "Python lower(): U+0130 -> 'i' + U+0307",
    },
    {
        "args": ["STRASSE@EXAMPLE.COM"],
        "expected": "strasse@example.com",
        "why": "ASCII upper-case",
    },
]
