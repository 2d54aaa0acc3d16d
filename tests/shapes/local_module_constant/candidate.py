from patterns import SALARY_RE  # the job's own pattern: inlined here as judged, and so in the converted job

TARGET = "vectorized"


def evaluate(text):
    return text.str.replace(SALARY_RE, "", regex=True)
