"""The valley between the two modes of a score histogram (no I/O): where
duplicates end and unrelated documents begin."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: A valley whose lowest point is above this share of the smaller mode's height
#: is shallow: the modes overlap, so where exactly the threshold goes is a guess
#: the data cannot settle. It is reported, and applied only when asked to.
CLEAR_DEPTH = 1 / 3


def _kernel(sigma: float) -> np.ndarray:
    """Gaussian weights over +-3 sigma bins, summing to 1 (sigma 0: no smoothing)."""
    if sigma <= 0:
        return np.ones(1)
    radius = max(1, int(math.ceil(3 * sigma)))
    x = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    return kernel / kernel.sum()


def smooth(counts: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian-smoothed counts, zero outside the range (so a spike in the last
    bin stays a peak rather than being folded back in)."""
    return np.convolve(np.asarray(counts, dtype=np.float64), _kernel(sigma), mode="same")


@dataclass(frozen=True)
class Valley:
    """Where two modes of a histogram (bins in ascending similarity) are separated.

    found: whether a second mode and a valley were found; low_mode / high_mode: bins
    of the unrelated and the duplicate mode; minimum: the lowest smoothed bin
    between them; floor: first and last bin of the valley floor (smoothed count
    within ``floor_share`` of the way from the minimum up to the lower mode);
    reason: why not, when not found.
    """

    found: bool
    low_mode: int | None = None
    high_mode: int | None = None
    minimum: int | None = None
    floor: tuple[int, int] | None = None
    depth: float | None = None  # smoothed count at the minimum / at the smaller mode

    @property
    def clear(self) -> bool:
        """Found, and deep enough that the modes hardly overlap (see CLEAR_DEPTH)."""
        return self.found and self.depth is not None and self.depth <= CLEAR_DEPTH

    reason: str = ""


def find_valley(
    counts: Sequence[float] | np.ndarray,
    *,
    sigma: float = 1.0,
    floor_share: float = 0.25,
    max_depth: float = 0.7,
    min_docs: int | None = None,
) -> Valley:
    """Find the valley between the two main modes of a histogram whose bins run
    from least to most similar.

    The global maximum of the smoothed counts is one mode; the other is the local
    maximum (either side) that stands out most over the lowest point between
    them. It counts only if that lowest point is at most ``max_depth`` times the
    smaller mode's height, the dip is at least two standard deviations of that
    height's smoothed Poisson count (noise in a sparse tail is not a mode), and
    each side of it holds ``min_docs`` raw counts (default: 4, or 0.5%
    of the total).
    """
    raw = np.asarray(counts, dtype=np.float64)
    total = float(raw.sum())
    if min_docs is None:
        min_docs = max(4, int(math.ceil(0.005 * total)))
    if total < 2 * min_docs:
        return Valley(False, reason=f"too few scores ({total:.0f}) to tell two modes apart")
    s = smooth(raw, sigma)
    # variance of a smoothed Poisson count, per unit of its mean: sum of squared weights
    noise = float((_kernel(sigma) ** 2).sum())
    padded = np.concatenate([[0.0], s, [0.0]])
    peaks = [
        i
        for i in range(len(s))
        if s[i] > 0 and padded[i + 1] >= padded[i] and padded[i + 1] > padded[i + 2]
    ]
    top = int(np.argmax(s))
    best: tuple[float, int, int] | None = None
    for p in peaks:
        if p == top:
            continue
        lo, hi = sorted((top, p))
        v = lo + int(np.argmin(s[lo : hi + 1]))
        if v in (lo, hi):
            continue
        smaller = min(s[lo], s[hi])
        if s[v] > max_depth * smaller or smaller - s[v] < 2 * math.sqrt(smaller * noise):
            continue
        if raw[: v + 1].sum() < min_docs or raw[v + 1 :].sum() < min_docs:
            continue
        prominence = smaller - s[v]
        if best is None or prominence > best[0]:
            best = (prominence, lo, hi)
    if best is None:
        return Valley(
            False,
            low_mode=top,
            reason=f"unimodal: no second mode with a dip to {max_depth:.0%} of its height "
            f"or less and at least {min_docs} documents each side",
        )
    _, lo, hi = best
    v = lo + int(np.argmin(s[lo : hi + 1]))
    # an empty stretch has no single lowest bin: take the middle of the bottom
    bottom = np.nonzero(s[lo : hi + 1] <= s[v] + 0.01 * min(s[lo], s[hi]))[0] + lo
    v = int(bottom[len(bottom) // 2]) if bottom.max() - bottom.min() == len(bottom) - 1 else v
    level = s[v] + floor_share * (min(s[lo], s[hi]) - s[v])
    a = v
    while a - 1 > lo and s[a - 1] <= level:
        a -= 1
    b = v
    while b + 1 < hi and s[b + 1] <= level:
        b += 1
    return Valley(True, lo, hi, v, (a, b), depth=float(s[v] / max(min(s[lo], s[hi]), 1e-12)))
