"""PySpark's zipped modules compiled: `python -m aether_mcp.evaluation.zip_code_workload OUT`.

Started only by the server (processes/zip_code_cache), never with agent code, with PYTHONPATH naming
PySpark's zip archives as Spark gives its Python workers: it loads what a judge's Python daemon loads
(confined/python_daemon._preload) and writes the code of every module compiled out of a zip archive,
with the hash of the source it was compiled from, to OUT (marshal).
"""

import hashlib
import marshal
import sys
import zipimport


def main(argv: list[str]) -> int:
    compiled: dict[str, tuple[bytes, bytes]] = {}
    original = zipimport._compile_source

    def recording(pathname, source):
        code = original(pathname, source)
        compiled[pathname] = (hashlib.sha256(source).digest(), marshal.dumps(code))
        return code

    zipimport._compile_source = recording
    from aether_mcp.confined import python_daemon

    python_daemon._preload()
    zipimport._compile_source = original
    if not compiled:
        print("no module was compiled out of a zip archive: is PYTHONPATH PySpark's zip archives?", file=sys.stderr)
        return 1
    with open(argv[1], "wb") as file:
        marshal.dump({"python": sys.version, "optimize": sys.flags.optimize, "modules": compiled}, file)
    print(f"{len(compiled)} modules compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
