"""Modules made from exact source bytes: called what the job calls the candidate, never what a library is called."""

import sys

from aether_mcp.evaluation.source_modules import module_from_source, module_name


def test_a_candidate_module_takes_its_job_name_unless_a_module_has_or_could_be_imported_under_it():
    made = module_from_source("VALUE = 1\n", "/ws/candidate/c.py", "aether_candidate", "strip_salary_c")
    assert made.__name__ == "strip_salary_c" and sys.modules["strip_salary_c"] is made and made.VALUE == 1
    # new bytes under the same name: a module of their own, and the name follows them
    again = module_from_source("VALUE = 2\n", "/ws/candidate/c.py", "aether_candidate", "strip_salary_c")
    assert again is not made and again.__name__ == "strip_salary_c" and sys.modules["strip_salary_c"] is again and again.VALUE == 2
    assert module_from_source("VALUE = 1\n", "/ws/candidate/c.py", "aether_candidate", "strip_salary_c") is made
    # a name a library has (loaded or only importable) is never taken: the harness may import it later
    for taken in ("json", "typing_extensions", "not an identifier"):
        assert module_name("aether_candidate", b"VALUE = 1\n", taken).startswith("aether_candidate_"), taken
    sys.modules.pop("strip_salary_c", None)
