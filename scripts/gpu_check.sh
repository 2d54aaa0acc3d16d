#!/usr/bin/env bash
# The GPU check, in under 5 minutes, with what the machine has: it installs and downloads nothing.
# scripts/gpu_check.py does the work (see its docstring): the geo example's haversine at 10M rows
# four ways, aether_mcp.backend's conversions and allocator on the device, the device counters
# behind gpu_verified (CUPTI through PyTorch's profiler where nsys is missing), and the Spark-side
# GPU tests where PySpark is installed. Whatever cannot run here is listed as not run, with why.
# Prints a Markdown report and one JSON summary.
#
#   scripts/gpu_check.sh [--out DIR] [--rows N]   # uses .venv/bin/python, else python3
#   PYTHON=/path/to/python scripts/gpu_check.sh
#   scripts/gpu_check.sh --dry-run                # no GPU needed: runs up to the first CUDA call
#
# Exit 0: every part that ran passed; 1: a part failed; 2: no GPU here (nothing to check).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PIP_NO_INDEX=1  # nothing below installs anything; make sure nothing could
export PYTHONUNBUFFERED=1

dry_run=0
for argument in "$@"; do [ "$argument" = "--dry-run" ] && dry_run=1; done
if [ "$dry_run" = 0 ] && ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    echo "gpu_check: no NVIDIA GPU on this machine (no /dev/nvidia*): nothing to check here (--dry-run runs up to the first CUDA call)." >&2
    exit 2
fi
if ! "$PYTHON" -c 'import numpy, pandas, pyarrow' 2>/dev/null; then
    echo "gpu_check: $PYTHON cannot import numpy, pandas and pyarrow, which every part needs; point PYTHON at an interpreter that has them." >&2
    exit 2
fi
exec timeout 290 "$PYTHON" scripts/gpu_check.py "$@"
