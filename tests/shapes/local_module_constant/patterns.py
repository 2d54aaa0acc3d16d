import re

SALARY_RE = re.compile(r"[$,]")
HEADER = "salary"
