"""MinHash minimums compiled by numba (imported by :mod:`dedup_pg.minhash` on
first use; numba compiles the loop once and caches it on disk).

numpy computes the 128 x n products, sums and minimums in three passes of
scalar 64-bit arithmetic (numpy has no vector loop for uint64 multiplication);
one fused loop over the same values, vectorized by LLVM, gives the same
minimums in a tenth of the time.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False)
def minimums(hashes: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min over ``hashes`` of ``(a[i] * h + b[i]) mod 2**64``, for each i."""
    n = a.shape[0]
    out = np.full(n, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    for j in range(hashes.shape[0]):
        x = hashes[j]
        for i in range(n):
            out[i] = min(out[i], a[i] * x + b[i])
    return out


@numba.njit(cache=True, nogil=True, boundscheck=False)
def shingle_values(chars: np.ndarray, shingle: int, prime: np.uint64) -> np.ndarray:
    """The 64-bit hash of each ``shingle``-gram of the code points ``chars``
    (repeats kept): ``minhash.shingle_hashes``'s polynomial and splitmix64
    finalizer, in one loop instead of eleven numpy passes."""
    n = chars.shape[0] - shingle + 1
    out = np.empty(max(n, 0), dtype=np.uint64)
    for j in range(n):
        h = np.uint64(chars[j])
        for k in range(1, shingle):
            h = h * prime + np.uint64(chars[j + k])
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        out[j] = h ^ (h >> np.uint64(31))
    return out
