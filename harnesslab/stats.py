"""Rates and their intervals: a counted rate, error statistics, Wilson and bootstrap
intervals, tau-bench's pass^k. Pure arithmetic, shared by the judge, CI gates and the report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rate:
    num: int
    den: int

    @property
    def value(self) -> float | None:
        return self.num / self.den if self.den else None

    def to_dict(self) -> dict[str, Any]:
        return {"num": self.num, "den": self.den, "value": self.value}


def mean_or_none(xs: Sequence[float]) -> float | None:
    """The mean, or None for no values."""
    return sum(xs) / len(xs) if xs else None


def error_stats(errors: Sequence[float]) -> dict[str, float | None]:
    if not errors:
        return {"signed_mean": None, "mape": None, "p95": None, "n": 0}
    abs_sorted = sorted(abs(x) for x in errors)
    p95 = abs_sorted[min(len(abs_sorted) - 1, math.ceil(0.95 * len(abs_sorted)) - 1)]
    return {"signed_mean": sum(errors) / len(errors),
            "mape": sum(abs_sorted) / len(abs_sorted), "p95": p95, "n": len(errors)}


# --- across seeds ---------------------------------------------------------------------------------

def wilson(num: int, den: int, z: float = 1.96) -> tuple[float, float] | None:
    """Wilson score interval for a binomial rate."""
    if den == 0:
        return None
    p = num / den
    d = 1 + z * z / den
    centre = (p + z * z / (2 * den)) / d
    half = z * math.sqrt(p * (1 - p) / den + z * z / (4 * den * den)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_mean(xs: Sequence[float], *, iterations: int = 2000, seed: int = 0,
                   level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean, with a seeded generator (deterministic).
    A constant sample's interval is [v, v]: every resample of it has that mean."""
    if not xs:
        return None
    if min(xs) == max(xs):
        return float(xs[0]), float(xs[0])
    # Imported here: ``import harnesslab`` stays free of numpy for the commands that need none.
    import numpy as np

    data = np.asarray(xs, dtype=float)
    rng = np.random.default_rng(seed)
    # All resamples at once: row i holds the indices drawn for resample i.
    picks = rng.integers(0, len(data), size=(iterations, len(data)))
    means = np.sort(data[picks].mean(axis=1))
    lo = means[int((1 - level) / 2 * iterations)]
    hi = means[min(iterations - 1, int((1 + level) / 2 * iterations))]
    return float(lo), float(hi)


def pass_hat_k(successes: int, trials: int, k: int) -> float | None:
    """tau-bench's unbiased pass^k: C(successes, k) / C(trials, k)."""
    if k > trials or trials == 0:
        return None
    return math.comb(successes, k) / math.comb(trials, k)
