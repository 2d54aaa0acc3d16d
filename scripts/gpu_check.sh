#!/usr/bin/env bash
# The GPU backend on this machine, in under 5 minutes, without downloading anything:
#   1. the GPU-marked tests (tests/test_gpu.py): the geo candidates on the device, device counters;
#   2. the geo example's haversine on 10M rows: row UDF logic vs NumPy vs CuPy vs a numba kernel, one table.
# Needs an NVIDIA GPU, and CuPy plus numba-cuda in the project's environment (cuDF optional: the
# parts that need it say so and skip). Nsight Systems (nsys) on the PATH adds the device counters.
#
#   scripts/gpu_check.sh            # uses .venv/bin/python, else python3
#   PYTHON=/path/to/python scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PIP_NO_INDEX=1  # nothing below installs anything; make sure nothing could

if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    echo "gpu_check: no NVIDIA GPU on this machine (no /dev/nvidia*): nothing to check here." >&2
    exit 2
fi
missing=$("$PYTHON" - <<'PY'
import importlib.util
need = {"cupy": "cupy-cuda12x", "numba": "numba", "numba.cuda": "numba-cuda", "pyspark": "pyspark", "pytest": "pytest"}
print(" ".join(p for m, p in need.items() if importlib.util.find_spec(m.split(".")[0]) is None or importlib.util.find_spec(m) is None))
PY
)
if [ -n "$missing" ]; then
    echo "gpu_check: $PYTHON lacks: $missing. Install the project with its GPU extra first: pip install -e '.[gpu,dev]'" >&2
    exit 2
fi
"$PYTHON" -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("cudf") else 1)' \
    && echo "gpu_check: cuDF found: vectorized candidates get cuDF columns" \
    || echo "gpu_check: cuDF not installed: its tests are skipped, and the CuPy row copies pandas columns to the device"
command -v nsys >/dev/null && echo "gpu_check: nsys found: device counters are checked" \
    || echo "gpu_check: nsys not on the PATH: results say gpu_verified: false, and the device-counter test is skipped"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

status=0
echo; echo "== 1/2 GPU-marked tests"
timeout 170 "$PYTHON" -m pytest tests/test_gpu.py -m gpu -rs -q -p no:cacheprovider --durations=5 || status=1
echo; echo "== 2/2 micro-benchmark, 10M rows"
timeout 120 "$PYTHON" benchmarks/gpu_micro.py --rows 10000000 --repeats 3 || status=1
exit $status
