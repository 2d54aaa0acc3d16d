"""The benchmark's statistics: a speedup from rounds timed side by side, and its bootstrap interval (NumPy only)."""

from __future__ import annotations

from aether_mcp.lazy_import import lazy_module

np = lazy_module("numpy")

BOOTSTRAP_RESAMPLES = 4_000


def paired_speedup(original: list[float], candidate: list[float]) -> float:
    """Median over rounds of original / candidate, each pair timed in the same round."""
    return round(float(np.median(np.asarray(original, dtype=float) / np.asarray(candidate, dtype=float))), 3)


def bootstrap_paired_ci(original: list[float], candidate: list[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> list[float]:
    """95% percentile-bootstrap interval of the paired speedup, resampling whole rounds."""
    rng = np.random.default_rng(seed)
    ratios = np.asarray(original, dtype=float) / np.asarray(candidate, dtype=float)
    medians = np.median(ratios[rng.integers(0, ratios.size, (resamples, ratios.size))], axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return [round(float(low), 3), round(float(high), 3)]


OVERHEAD_ABOVE_ONE = (
    "the candidate's median was below the no-UDF floor's: noise (see the interval and every run), or a plan that skips work "
    "the floor does; read it as all of the UDF's overhead removed, not more"
)


def overhead_eliminated(original_s: float, candidate_s: float, floor_s: float | None) -> tuple[float | None, str]:
    """(original - candidate) / (original - floor), from medians, and a note when it is above 1; None without a floor below the original."""
    if floor_s is None or original_s <= floor_s:
        return None, ""
    share = round((original_s - candidate_s) / (original_s - floor_s), 3)
    return share, OVERHEAD_ABOVE_ONE if share > 1 else ""
