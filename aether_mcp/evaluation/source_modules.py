"""Modules made from exact source bytes: compiled and executed as given, never through the import cache.

The reference is loaded from the bytes whose hash the server checked, so a `__pycache__` file
planted next to `original/udf.py` (or an edited file between the check and the load) cannot be
what runs. Candidates are loaded the same way from the text the server read. Each module is
named after its content's digest and registered with cloudpickle by value, so Spark ships its
functions to the Python workers as they are, without importing anything there.
"""

from __future__ import annotations

import hashlib
import sys
import types


def digest(source: str | bytes) -> str:
    return hashlib.sha256(source.encode("utf-8") if isinstance(source, str) else source).hexdigest()


_MADE: dict[tuple[str, str], types.ModuleType] = {}  # (module name, content digest): the module made from it


def module_name(prefix: str, data: bytes, named: str | None) -> str:
    """`named` (a candidate's name in the job, `<udf>_<candidate>`) where no other module has or could be imported under
    that name here, else a name of the content's own: a candidate's module is called what the job will call it, but
    never what a library the harness imports later is called."""
    if named and named.isidentifier():
        if named in sys.modules:
            if any(module is sys.modules[named] for module in _MADE.values()):
                return named
        elif not _importable(named):
            return named
    return f"{prefix}_{digest(data)[:16]}"


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return True


def module_from_source(source: str | bytes, filename: str, prefix: str, named: str | None = None) -> types.ModuleType:
    """A module holding exactly `source`, labelled `filename` in tracebacks; one per name and content in this process."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    name = module_name(prefix, data, named)
    existing = _MADE.get((name, digest(data)))
    if existing is not None:
        sys.modules[name] = existing
        return existing
    module = types.ModuleType(name)
    module.__file__ = filename
    before = sys.modules.get(name)
    sys.modules[name] = module
    try:
        exec(compile(data, filename, "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        if before is not None:
            sys.modules[name] = before
        else:
            del sys.modules[name]
        raise
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)
    _MADE[(name, digest(data))] = module
    return module
