"""MinHash signatures over character 5-grams: the layer that finds rewrites.

Synonym swaps and reworded leads change a word in most clauses, so clause
hashes no longer match and a 64-bit SimHash drifts 4 to 17 bits; the share of
character 5-grams two texts have in common (Jaccard) stays above 0.5. On real
Sina articles with such rewrites, MinHash over 5-grams found 100% of synonym
and lead rewrites (bench/results/semantic.md), where SimHash found 57%.

The signature is NUM_PERM minimums of multiply-shift hashes of the text's
distinct 5-grams (whitespace removed). The 5-gram hashes and the minimums are
loops that LLVM compiles for the CPU when a process makes its first signature
(``_minhash_jit``: ~0.05 s); numpy's versions of the same arithmetic, in chunks
so a huge document costs time, not memory, are the reference the compiled ones
are tested against.

PostgreSQL cuts the signature's first BANDS * BAND_ROWS values into BANDS
bands of BAND_ROWS values (``dedup_minhash_bands``) kept in
``document_minhash_bands``; two texts sharing any band value are compared on
the whole signature. With 12 bands of 3, a pair at Jaccard 0.5 shares a band
with probability 0.80, at 0.6 0.95, at 0.4 0.55, at 0.2 0.09 (16 bands of 3,
revisions 0021 to 0068: 0.88, 0.98, 0.65, 0.12; 32 bands of 4 before: 0.87,
0.99, 0.57, 0.05), at three quarters of 16's index entries. The other layers
find most of the pairs 12 bands miss; the verdicts that moved from 16 to 12
are in BENCHMARKS.md (revision 0069), the pairs found in
bench/candidate_recall.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

#: Bump when signatures change (shingles, hashing, permutations): stored ones are
#: then stale (``dedup-pg rebuild --refingerprint`` rewrites them).
MINHASH_VERSION = 2
NUM_PERM = 128
#: Bits kept of each minimum (a "b-bit" MinHash): two unequal minimums agree
#: on 16 bits with probability 2**-16, so a pair's estimated Jaccard moves by
#: 1/128 for about 1 pair in 500 at most. Half the bytes of 32-bit values on
#: every stored document (revision 0026: 525 -> 280 bytes a signature).
VALUE_BITS = 16
SHINGLE = 5
#: The band layout of ``dedup_minhash_bands`` (SQL), for tests and benchmarks.
BAND_ROWS = 3
BANDS = 12
#: Texts with fewer distinct 5-grams get no signature. In a short notice one
#: changed place name or figure is the whole difference, yet it leaves a
#: Jaccard near 0.7 ("示例市举行新闻发布会..." vs "样本县举行新闻发布会...", 44
#: characters): MinHash speaks only for texts long enough that 0.5 means
#: shared sentences. Short texts are left to the exact, SimHash and
#: containment layers.
MIN_SHINGLES = 100
_CHUNK = 4096
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)

_rng = np.random.default_rng(20181120)
# multiply-shift: h_i(x) = (a_i * x + b_i) mod 2**64 >> 32, a_i odd
_A = (_rng.integers(0, 2**63, NUM_PERM, dtype=np.uint64) << np.uint64(1)) | np.uint64(1)
_B = _rng.integers(0, 2**63, NUM_PERM, dtype=np.uint64)
_A_COL = np.ascontiguousarray(_A[:, None])
_B_COL = np.ascontiguousarray(_B[:, None])
_PRIME = np.uint64(1_000_003)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads the polynomial hash over all 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class _Kernels(NamedTuple):
    shingle_values: Callable[[np.ndarray], np.ndarray]
    minimums: Callable[[np.ndarray], np.ndarray]


def shingle_hashes(key: str, kernels: _Kernels | None = None) -> np.ndarray:
    """Distinct 64-bit hashes of the key's character 5-grams (spaces removed), sorted."""
    # str.split() removes the whitespace \s matches, at a quarter of a regex's cost
    chars = np.frombuffer("".join(key.split()).encode("utf-32-le"), dtype=np.uint32)
    n = len(chars) - SHINGLE + 1
    if n <= 0:
        return np.empty(0, dtype=np.uint64)
    h = (kernels or compiled_kernels()).shingle_values(chars)
    # sort + drop repeats: what np.unique returns, at a third of its cost
    h.sort()
    if n > 1:
        keep = np.empty(n, dtype=bool)
        keep[0] = True
        np.not_equal(h[1:], h[:-1], out=keep[1:])
        h = h[keep]
    return h


def _shingle_values_numpy(chars: np.ndarray) -> np.ndarray:
    """The hash of each 5-gram of ``chars`` (repeats kept), with numpy."""
    n = len(chars) - SHINGLE + 1
    codes = chars.astype(np.uint64)
    with np.errstate(over="ignore"):
        # h = (((c0 * P + c1) * P + c2) * P + ...), in place
        h = codes[:n].copy()
        for k in range(1, SHINGLE):
            h *= _PRIME
            h += codes[k : k + n]
        return _mix(h)


def _minimums_numpy(hashes: np.ndarray) -> np.ndarray:
    """min over ``hashes`` of each permutation's ``(a * h + b) mod 2**64``, with
    numpy: one buffer for all chunks, products and sums in place."""
    sig = np.full(NUM_PERM, np.iinfo(np.uint64).max, dtype=np.uint64)
    buf = np.empty((NUM_PERM, min(_CHUNK, len(hashes))), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, len(hashes), _CHUNK):
            chunk = hashes[start : start + _CHUNK]
            values = buf[:, : len(chunk)]
            np.multiply(_A_COL, chunk, out=values)
            np.add(values, _B_COL, out=values)
            np.minimum(sig, values.min(axis=1), out=sig)
    return sig


#: numpy's kernels: the reference the compiled ones must equal
NUMPY_KERNELS = _Kernels(_shingle_values_numpy, _minimums_numpy)


def signature(key: str) -> list[int] | None:
    """NUM_PERM minimums, each cut to VALUE_BITS bits (signed 16-bit: PostgreSQL
    ``smallint[]``), or None when the text has fewer than MIN_SHINGLES distinct
    5-grams."""
    kernels = compiled_kernels()
    hashes = shingle_hashes(key, kernels)
    if len(hashes) < MIN_SHINGLES:
        return None
    # The shift comes last: x >> 32 is monotonic, so min(x >> 32) == min(x) >> 32.
    # Bits 32-47 of the minimum: its top bits are mostly zeros (the least of
    # hundreds of values), these are uniform. Before signature version 2 the
    # signature kept bits 32-63 (int32); revision 0026 cut the stored ones to
    # these 16 (their low half), so both versions agree on every value kept.
    sig = kernels.minimums(hashes)
    low = (sig >> np.uint64(32)) & np.uint64((1 << VALUE_BITS) - 1)
    return low.astype(np.uint16).view(np.int16).tolist()


def band_keys(values: list[int], bands: int = BANDS) -> list[int]:
    """The BANDS band keys PostgreSQL's ``dedup_minhash_bands`` makes of a
    signature of these values (for tests and benchmarks): band b is values
    3b to 3b+2 (b < BANDS), 16 bits each, one after the other, with b above them; none
    (SQL: NULL) for fewer than BANDS * BAND_ROWS values. ``bands``: the first
    that many bands instead (16 was the layout of revisions 0049 to 0068)."""
    if len(values) < bands * BAND_ROWS:
        return []
    keys = []
    for b in range(bands):
        key = b
        for v in values[b * BAND_ROWS : (b + 1) * BAND_ROWS]:
            key = key << VALUE_BITS | (v & 0xFFFF)
        keys.append(key)
    return keys


@functools.cache
def compiled_kernels() -> _Kernels:
    """The 5-gram hashes and the minimums as LLVM compiles them for this CPU
    (:mod:`dedup_pg._minhash_jit`; the same values: 0.35 -> 0.035 ms a
    sina2018 signature, one core)."""
    from . import _minhash_jit as jit

    kernels = jit.Kernels(SHINGLE, int(_PRIME), _A, _B)
    return _Kernels(kernels.shingle_values, kernels.minimums)


def similarity(a: list[int], b: list[int]) -> float:
    """Estimated Jaccard: the share of equal signature positions (as SQL's
    ``dedup_minhash_similarity``)."""
    return float(np.count_nonzero(np.asarray(a) == np.asarray(b))) / NUM_PERM
