"""The job's own Python modules under the server root, found the way Python finds them when the job runs.

An absolute import (`from geo import haversine`, `from proj.udfs import clean`) is looked up beside
the importing file, then in each folder above it up to the root: a job run as a script imports its
neighbours, and a job run from the project's top folder (`python -m proj.jobs.daily`) imports
`proj` from there. A relative import (`from .geo import haversine`) is looked up from the importing
file's package. A module that is not a file under the root is a library, and stays an import.
Nothing is imported or run: this only names (and parses) files.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any


class LocalModules:
    """Finds the files of local modules under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def find(self, importer: Path, module: str | None, level: int) -> Path | None:
        """The file (a `.py`, or a package's `__init__.py`) that `from <level dots><module> import ...` in `importer` reads, or None."""
        parts = module.split(".") if module else []
        for base in self._bases(importer, level):
            found = self._at(base, parts)
            if found is not None:
                return found
        return None

    def tree_reader(self, importer: Path) -> Callable[[Any], ast.Module | None]:
        """A function from an ImportedName in `importer` to the parsed module it names, None for a library or an unreadable file."""

        def read(imported: Any) -> ast.Module | None:
            found = self.find(importer, imported.module, imported.level)
            try:
                return ast.parse(found.read_text(encoding="utf-8")) if found is not None else None
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                return None

        return read

    def submodule(self, package: Path, name: str) -> Path | None:
        """`package`'s submodule `name` (`from pkg import geo` where pkg/geo.py exists), or None."""
        if package.name != "__init__.py":
            return None
        return self._at(package.parent, [name])

    def _bases(self, importer: Path, level: int) -> list[Path]:
        folder = importer.resolve().parent
        if level:
            for _ in range(level - 1):
                folder = folder.parent
            return [folder] if self._inside(folder) else []
        bases = []
        while self._inside(folder):
            bases.append(folder)
            if folder == self.root:
                break
            folder = folder.parent
        return bases

    def _at(self, base: Path, parts: list[str]) -> Path | None:
        if not parts:
            init = base / "__init__.py"
            return init.resolve() if init.is_file() and self._inside(init.resolve()) else None
        target = base.joinpath(*parts)
        for candidate in (target.with_name(target.name + ".py"), target / "__init__.py"):
            if candidate.is_file() and self._inside(candidate.resolve()):
                return candidate.resolve()
        return None

    def _inside(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)
