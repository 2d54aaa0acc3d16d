import re

SALARY_RE = re.compile(r"[$,]")
HEADER = "salary"


def strip_money(text):
    return SALARY_RE.sub("", text)
