"""Modules imported on first use, so that the server answers `tools/list` before loading Spark.

`T = lazy_module("pyspark.sql.types")` binds a stand-in; the first attribute read (`T.IntegerType`)
imports the real module, and every read is answered by the module as it is at that moment (no
copy of its names that could go stale). Use it only for module-level imports whose names are read
inside functions, never at import time.
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class _LazyModule(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_lazy_target"] = name

    def __getattr__(self, attribute: str) -> Any:
        module = self.__dict__.get("_lazy_module")
        if module is None:
            module = self.__dict__["_lazy_module"] = importlib.import_module(self.__dict__["_lazy_target"])
        return getattr(module, attribute)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__dict__["_lazy_target"]))


def lazy_module(name: str) -> Any:
    """A module object that imports `name` the first time one of its attributes is read."""
    return _LazyModule(name)
