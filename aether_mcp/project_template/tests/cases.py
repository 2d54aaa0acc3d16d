"""Behaviour cases for `{{udf_name}}({{signature}})`.

Each case: {"args": [{{signature}}], "expected": <the original's output>, "why": "<what it pins>"}.
For an input on which the original raises, write "raises": "<ExceptionType>" instead of "expected".
Values are Python values as Spark returns them ({{return_type}}): None for null, float("nan") for NaN,
lists for arrays, dicts for maps and for structs (keyed by field name).
"""

CASES = [
]
