"""Which libraries a candidate's `evaluate(*series)` runs on: the CPU backend or the GPU backend.

One candidate source serves both. It imports what it needs from here instead of naming NumPy,
CuPy, pandas or cuDF itself:

    from aether_mcp.backend import xp, xdf, array, series

- `xp` is NumPy on the CPU backend and CuPy on the GPU backend; `xdf` is pandas or cuDF.
- `array(s, dtype, na_value)` is a column's values as an `xp` array, nulls replaced by `na_value`.
- `series(values, null=mask, index=...)` is an `xdf` Series of `values` whose null mask is `null`.
- `struct({"min": a, "max": b}, null=mask)` is a struct Series (a struct result with null structs).

Columns reach `evaluate` as pandas Series with nullable dtypes (CPU; arrays, structs and maps
Arrow-backed, `pd.ArrowDtype`) or as cuDF Series (GPU), null and NaN apart in both, at every
depth; the harness turns them into Arrow and back (`from_arrow`, `to_arrow`). Which backend a process uses is decided once, from `AETHER_BACKEND` ("cpu" or
"gpu"), which the server sets for every process that runs candidate code. Nothing here imports
CuPy, cuDF or numba until a GPU process asks for them, so the default install never needs them.

On the GPU backend the allocators are fixed before anything runs, because the allocator alone
can change a benchmark tenfold: RMM's pool for cuDF and CuPy where RMM is installed (it comes
with cuDF), else CuPy's own memory pool. `allocator()` says which, for every result to record.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BACKENDS = ("auto", "cpu", "gpu")
ENV = "AETHER_BACKEND"
RMM_POOL_BYTES = 1 << 30  # the pool starts at 1 GiB and grows as needed
INSTALL_HINT = (
    "pip install 'aether-mcp[cuda12]' or 'aether-mcp[cuda13]' (CuPy, cuDF and numba-cuda built for that CUDA major version) on a machine "
    "with an NVIDIA GPU; where CuPy is installed already, 'aether-mcp[gpu]' adds only numba-cuda"
)
CUPY_PACKAGES = ("cupy-cuda12x", "cupy-cuda13x")


class BackendUnavailable(ValueError):
    """The GPU backend was asked for where it cannot run."""


@dataclass(frozen=True)
class Resolved:
    """Where a run's candidate code goes, decided in the server before anything starts."""

    name: str  # "cpu" or "gpu"
    simulated: bool  # a kernel candidate under numba's CUDA simulator
    note: str

    def env(self) -> dict[str, str]:
        """Environment for every process that runs the candidate (Spark's Python workers inherit it)."""
        env = {ENV: self.name}
        if self.name == "cpu":
            env["NUMBA_ENABLE_CUDASIM"] = "1"  # kernels run, slowly and for correctness only, on the CPU
        return env


CPU = Resolved("cpu", False, "pandas (nullable dtypes) and NumPy on the CPU")
ALLOCATOR_POLICY = f"RMM pool ({RMM_POOL_BYTES >> 30} GiB initial) for cuDF and CuPy where rmm is installed, else CuPy's MemoryPool; set in each process before the candidate loads"


def has_gpu() -> bool:
    """Whether an NVIDIA device is visible to this machine."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


def gpu_problem(kind: str, needs_cudf: bool = False) -> str | None:
    """Why a `kind` ("vectorized" or "kernel") candidate cannot run on the GPU backend here; None when it can.

    CuPy is enough for both kinds: without cuDF the columns arrive as pandas Series and `array`
    copies them to the device. Only a candidate that uses cuDF itself (`xdf`, `import cudf`:
    `needs_cudf`) needs it. Looks for the packages without importing them: importing CUDA
    libraries costs seconds and the server never runs candidate code itself.
    """
    if not has_gpu():
        return "this machine has no NVIDIA GPU (no /dev/nvidia*)"
    needed = {"cupy": "CuPy (cupy-cuda12x or cupy-cuda13x)"}
    if needs_cudf:
        needed["cudf"] = "cuDF (cudf-cu12 or cudf-cu13), which the candidate uses"
    if kind == "kernel":
        needed["numba"] = "numba-cuda"
    missing = [package for module, package in needed.items() if importlib.util.find_spec(module) is None]
    if kind == "kernel" and not missing and importlib.util.find_spec("numba.cuda") is None:
        missing.append("numba-cuda")
    if missing:
        return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed ({INSTALL_HINT})"
    return None


def resolve(requested: str, kind: str | None, device_code: bool = True, needs_cudf: bool = False) -> Resolved:
    """The backend for a run of a candidate of `kind` ("sql", "vectorized", "kernel"; None: unknown).

    "auto" takes the GPU where it can run a candidate written for it (`device_code`: it imports
    aether_mcp.backend, CuPy, cuDF or numba.cuda) and the CPU otherwise, so a NumPy/pandas-only
    candidate never meets cuDF Series; "gpu" where it cannot run raises BackendUnavailable saying
    why and what to do; "cpu" always works. A kernel on the CPU backend runs under numba's CUDA
    simulator: correct on small inputs, never a measure of speed.
    """
    if requested not in BACKENDS:
        raise BackendUnavailable(f"backend must be one of {', '.join(BACKENDS)} (got {requested!r})")
    if kind == "sql":
        if requested == "gpu":
            raise BackendUnavailable(
                "a sql candidate runs in Spark's JVM, not on aether-mcp's GPU backend (a GPU plugin for Spark such as RAPIDS would run it there); use backend 'auto' or 'cpu'"
            )
        return Resolved("cpu", False, "Spark SQL expressions in the JVM: no Python, no GPU")
    problem = gpu_problem(kind or "vectorized", needs_cudf)
    if requested == "auto" and problem is None and not device_code:
        return Resolved("cpu", kind == "kernel", "pandas (nullable dtypes) and NumPy on the CPU: the candidate imports no GPU library (auto keeps it on the CPU)")
    if requested == "gpu" and problem:
        raise BackendUnavailable(f"the GPU backend cannot run here: {problem}. Use backend 'cpu' (or 'auto', which falls back to it).")
    if requested != "cpu" and problem is None:
        if kind == "kernel":
            return Resolved("gpu", False, "numba.cuda kernel on the GPU, arguments as CuPy arrays")
        if importlib.util.find_spec("cudf") is None:
            return Resolved("gpu", False, "CuPy on the GPU; no cuDF here, so columns arrive as pandas Series and array() copies them to the device")
        return Resolved("gpu", False, "cuDF Series from Arrow on the GPU, CuPy for arrays")
    why = "" if requested == "cpu" else f" ({problem})"
    if kind == "kernel":
        return Resolved("cpu", True, f"kernel under numba's CUDA simulator on the CPU{why}: simulated, for correctness only; no GPU speed is measured")
    return Resolved("cpu", False, f"pandas (nullable dtypes) and NumPy on the CPU{why}")


def cupy_package() -> str | None:
    """The distribution that provides `cupy` and its version ("cupy-cuda13x 14.2.0"), found without importing CuPy; None if absent.

    CuPy is published once per CUDA major version under different names (cupy-cuda12x, cupy-cuda13x),
    and any of them serves this backend; results record which one ran.
    """
    from importlib import metadata

    try:
        names = sorted(set(metadata.packages_distributions().get("cupy", [])))
    except Exception:  # a broken distribution's metadata is no reason to fail a run
        names = []
    if not names:
        return None
    found = []
    for distribution in names:
        try:
            found.append(f"{distribution} {metadata.version(distribution)}")
        except metadata.PackageNotFoundError:
            found.append(distribution)
    return ", ".join(found)


def cuda_major(package: str | None) -> int | None:
    """12 for "cupy-cuda12x 13.6.0", 13 for "cupy-cuda13x 14.2.0"; None for a source build or none."""
    import re

    match = re.search(r"cupy-cuda(\d+)x", package or "")
    return int(match.group(1)) if match else None


# --- inside a process that runs candidate code ------------------------------------------------


@dataclass
class _Active:
    name: str
    xp: Any
    xdf: Any
    allocator: dict[str, Any] = field(default_factory=dict)
    pool: Any = None  # CuPy's MemoryPool, where it is the allocator


_ACTIVE: _Active | None = None
_SETTLED: list[str] = []  # the backend AETHER_BACKEND named, read before the harness's variables are removed


def settle() -> str:
    """Read AETHER_BACKEND once (default: cpu); the backend set up on first use is this one, whatever the environment says later."""
    if not _SETTLED:
        _SETTLED.append(os.environ.get(ENV, "cpu"))
    return _SETTLED[0]


def active() -> _Active:
    """This process's backend, set up on first use from AETHER_BACKEND (default: cpu)."""
    global _ACTIVE
    if _ACTIVE is None:
        _ACTIVE = _gpu() if settle() == "gpu" else _cpu()
    return _ACTIVE


def activate(chosen: str) -> _Active:
    """Switch this process to `chosen` ("cpu" or "gpu"); candidates imported afterwards bind its xp/xdf.

    For benchmarks that compare both backends in one process; the harness sets AETHER_BACKEND instead.
    """
    global _ACTIVE
    if chosen not in ("cpu", "gpu"):
        raise ValueError(f"backend must be cpu or gpu (got {chosen!r})")
    _ACTIVE = _gpu() if chosen == "gpu" else _cpu()
    return _ACTIVE


def name() -> str:
    return active().name


def allocator() -> dict[str, Any]:
    """The allocator configuration this process runs under (empty on the CPU backend)."""
    return dict(active().allocator)


def device_info() -> dict[str, Any]:
    """What the GPU backend runs on in this process: the CuPy package (CUDA 12 or 13 build), CUDA versions, device, cuDF.

    Empty on the CPU backend. Recorded with every GPU result, next to the allocator.
    """
    current = active()
    if current.name != "gpu":
        return {}
    runtime = current.xp.cuda.runtime
    package = cupy_package()
    info: dict[str, Any] = {"cupy": package or f"cupy {current.xp.__version__} (no package metadata)", "cupy_cuda_major": cuda_major(package)}
    try:
        info["cuda_runtime"] = _cuda_version(runtime.runtimeGetVersion())
        info["cuda_driver"] = _cuda_version(runtime.driverGetVersion())
        name = runtime.getDeviceProperties(runtime.getDevice())["name"]
        info["device"] = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # recorded, not raised: the result it describes stands
        info["error"] = f"{exc.__class__.__name__}: {exc}"
    info["cudf"] = getattr(current.xdf, "__version__", "installed") if current.xdf is not None else "not installed"
    return info


def _cuda_version(number: int) -> str:
    """CUDA's encoded version (13000) as text ("13.0")."""
    return f"{number // 1000}.{number % 1000 // 10}"


def _cpu() -> _Active:
    import numpy
    import pandas

    return _Active("cpu", numpy, pandas)


def _gpu() -> _Active:
    import cupy

    try:
        import cudf
    except ImportError:
        cudf = None
    try:
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator

        rmm.reinitialize(pool_allocator=True, initial_pool_size=RMM_POOL_BYTES)
        cupy.cuda.set_allocator(rmm_cupy_allocator)
        chosen = {"cudf": "rmm pool", "cupy": "rmm pool (rmm_cupy_allocator)", "initial_pool_bytes": RMM_POOL_BYTES}
    except ImportError:
        pool = cupy.cuda.MemoryPool()
        cupy.cuda.set_allocator(pool.malloc)
        chosen = {"cudf": "not installed" if cudf is None else "rmm default", "cupy": "cupy MemoryPool"}
        return _Active("gpu", cupy, cudf, chosen, pool)
    return _Active("gpu", cupy, cudf, chosen)


def __getattr__(attribute: str) -> Any:
    # `from aether_mcp.backend import xp, xdf` resolves here, in the process that runs the candidate
    if attribute == "xp":
        return active().xp
    if attribute == "xdf":
        if active().xdf is None:
            raise ImportError(f"cuDF is not installed, so the GPU backend has no xdf ({INSTALL_HINT})")
        return active().xdf
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


def array(values: Any, dtype: str = "float64", na_value: Any = float("nan")) -> Any:
    """A column's values as an xp array of `dtype`, nulls replaced by `na_value` (a NaN stays NaN)."""
    import numpy

    current = active()
    if current.name == "gpu":
        xp = current.xp
        if isinstance(values, xp.ndarray):
            return values.astype(dtype, copy=False)
        if current.xdf is not None and isinstance(values, current.xdf.Series):
            return values.astype(dtype).to_cupy(na_value=na_value)
        # without cuDF, columns arrive as pandas Series: one copy to the device
        return xp.asarray(values.to_numpy(dtype=dtype, na_value=na_value) if hasattr(values, "to_numpy") else numpy.asarray(values, dtype=dtype))
    if isinstance(values, numpy.ndarray):
        return values.astype(dtype, copy=False)
    return values.to_numpy(dtype=dtype, na_value=na_value)


def series(values: Any, null: Any = None, index: Any = None) -> Any:
    """An xdf Series of `values` (an xp array) that is null where `null` is true; NaN stays a value.

    On the GPU backend without cuDF the result is a pandas Series: the one copy back of the result.
    """
    import numpy
    import pandas

    current = active()
    if current.name == "gpu":
        if current.xdf is not None:
            result = current.xdf.Series(values, index=index, nan_as_null=False)
            return result if null is None else result.mask(null)
        values = current.xp.asnumpy(values)
        null = None if null is None else current.xp.asnumpy(null)
        index = index if isinstance(index, pandas.Index) else None
    values = numpy.asarray(values)
    mask = numpy.zeros(len(values), dtype=bool) if null is None else numpy.asarray(null, dtype=bool)
    if values.dtype.kind == "f":
        data = pandas.arrays.FloatingArray(numpy.where(mask, 0, values).astype(values.dtype), mask)
    elif values.dtype.kind in "iu":
        data = pandas.arrays.IntegerArray(numpy.where(mask, 0, values).astype(values.dtype), mask)
    elif values.dtype.kind == "b":
        data = pandas.arrays.BooleanArray(numpy.where(mask, False, values), mask)
    else:
        data = pandas.array([None if m else v for v, m in zip(values.tolist(), mask.tolist())])
    return pandas.Series(data, index=index, copy=False)


def from_arrow(column: Any) -> Any:
    """An Arrow column as the Series `evaluate` receives on this backend (null and NaN apart).

    GPU backend: a cuDF Series on the device; without cuDF (kernel candidates need only CuPy and
    numba) the CPU's pandas Series, which `array` copies to the device.
    """
    current = active()
    if current.name == "gpu" and current.xdf is not None:
        return current.xdf.Series.from_arrow(column)
    from aether_mcp.arrow_pandas import column_to_series

    return column_to_series(column)


def to_arrow(result: Any, arrow_type: Any) -> Any:
    """`evaluate`'s result as an Arrow array of `arrow_type` (None: the type it has): the one copy back to the host.

    A struct result may be a DataFrame with one column per field (PySpark's convention; no row of
    it is a null struct) or a struct Series (`struct`, which can hold null structs).
    """
    from aether_mcp.arrow_pandas import frame_to_struct, series_to_arrow

    current = active()
    if current.name == "gpu":
        xp, xdf = current.xp, current.xdf
        if isinstance(result, xp.ndarray):
            if xdf is None:
                return series_to_arrow(series(result), arrow_type)
            result = xdf.Series(result, nan_as_null=False)
        if xdf is not None and isinstance(result, xdf.DataFrame):
            return frame_to_struct(result, arrow_type, to_arrow)
        if xdf is not None and isinstance(result, xdf.Series):
            converted = result.to_arrow()
            return converted if arrow_type is None or converted.type == arrow_type else converted.cast(arrow_type)
    return series_to_arrow(result, arrow_type)


def struct(fields: dict[str, Any], null: Any = None, index: Any = None) -> Any:
    """A struct Series from one Series (or xp array) per field, in order; null where `null` is true.

    What a vectorized candidate returns for a struct result that has null structs (a DataFrame,
    PySpark's convention, cannot say that a whole struct is null). Each field keeps its own nulls
    and NaNs. On the CPU backend a pandas Series of `pd.ArrowDtype(struct<...>)`; on the GPU
    backend with cuDF a cuDF struct Series.
    """
    import numpy
    import pandas
    import pyarrow

    current = active()
    children = [to_arrow(values if hasattr(values, "to_arrow") or hasattr(values, "array") else series(values), None) for values in fields.values()]
    if null is not None and current.name == "gpu" and isinstance(null, current.xp.ndarray):
        null = current.xp.asnumpy(null)
    mask = None if null is None else pyarrow.array(numpy.asarray(null, dtype=bool))
    combined = pyarrow.StructArray.from_arrays(children, names=list(fields), mask=mask)
    if current.name == "gpu" and current.xdf is not None:
        return current.xdf.Series.from_arrow(combined)
    return pandas.Series(pandas.arrays.ArrowExtensionArray(combined), index=index if isinstance(index, pandas.Index) else None, copy=False)


def synchronize() -> None:
    """Wait for queued device work (GPU backend); nothing on the CPU backend."""
    if active().name == "gpu":
        active().xp.cuda.runtime.deviceSynchronize()
