import re

SPACES = re.compile(r"\s+")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
