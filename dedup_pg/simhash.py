"""64-bit SimHash and its band layout.

SimHash (Charikar 2002; Manku, Jain, Das Sarma, "Detecting near-duplicates for
web crawling", WWW 2007): each weighted term votes on 64 bits with its hash;
the sign of each bit's vote sum is the fingerprint. Near-identical term
distributions give fingerprints a few bits apart.

The fingerprint is cut into :data:`BANDS` bands of 16 bits. By pigeonhole, two
fingerprints at Hamming distance ``d`` agree exactly on at least one band when
``d < BANDS``, and in general differ in at most ``d // BANDS`` bits in at least
one band. So a lookup that probes every band value within radius
``d // BANDS`` finds every fingerprint within distance ``d``: radius 0 (exact
band match) for the duplicate distance 3, radius 1 (17 values a band) for
review distances up to 7.

The vote is summed by a compiled loop. It gives the same fingerprint as the
``simhash`` package's ``Simhash(features, f=64, hashfunc=...)`` for the same
hash function (asserted in tests) at a fraction of the cost.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

import numpy as np

from ._terms_jit import kernels

BITS = 64
BANDS = 4
BAND_BITS = BITS // BANDS
_hash_cache: dict[str, int] = {}
_HASH_CACHE_LIMIT = 2_000_000


def _md5_tail(term: str) -> bytes:
    """The last 8 bytes of the term's MD5: the low 64 bits the ``simhash``
    package votes with (its default hash is the whole MD5 as an integer)."""
    return hashlib.md5(term.encode("utf-8")).digest()[-8:]


def term_hash_uncached(term: str) -> int:
    """:func:`term_hash` without its cache (for callers that keep the value)."""
    return int.from_bytes(_md5_tail(term), "big")


def term_hashes(terms: list[str]) -> np.ndarray:
    """:func:`term_hash_uncached` of each term, as a uint64 array: the tails
    joined and read big-endian in one pass."""
    return np.frombuffer(b"".join(map(_md5_tail, terms)), dtype=">u8").astype(np.uint64)


def term_hash(term: str) -> int:
    """Stable 64-bit hash of a term (:func:`_md5_tail`, as the simhash package)."""
    value = _hash_cache.get(term)
    if value is None:
        value = term_hash_uncached(term)
        if len(_hash_cache) < _HASH_CACHE_LIMIT:
            _hash_cache[term] = value
    return value


def simhash(weights: Mapping[str, float]) -> int:
    """64-bit SimHash (unsigned) of weighted terms; 0 when there are no terms."""
    hashes = np.fromiter((term_hash(t) for t in weights), dtype=np.uint64, count=len(weights))
    w = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
    return simhash_arrays(hashes, w)


#: Relative rounding error of one float64 operation (2**-53).
_UNIT_ROUNDOFF = 2.0**-53


def simhash_arrays(hashes: np.ndarray, weights: np.ndarray) -> int:
    """SimHash of terms given as arrays of 64-bit hashes and (non-negative)
    weights: bit i is set when the weights of the terms with bit i set
    outweigh those without, exactly (a tie leaves it clear).

    The votes are summed by a compiled loop (:mod:`dedup_pg._terms_jit`), in
    the terms' order. Until stop 62 they came from a matrix product, whose
    additions BLAS orders as the CPU's kernel likes: a vote near zero (a tie,
    common in short texts whose unknown terms share the median IDF) came out
    slightly positive under one kernel and negative under another, so the
    same text had SimHashes 3-5 bits apart on two machines (336 of
    dxy_covid_short's 3,712 items between OpenBLAS's Haswell and Katmai
    kernels on one machine). Whatever the order, a vote within the sum's
    rounding bound is summed again exactly (``math.fsum``): the bits are the
    exact ones on every machine, and the same as the product's were."""
    if len(hashes) == 0:
        return 0
    votes = kernels().simhash_votes(hashes, weights)
    # |computed - exact| <= n * u / (1 - n * u) * sum(|w|) in any order of
    # additions (the terms are +-w, exact); twice that, to be safe
    bound = 2.0 * len(weights) * _UNIT_ROUNDOFF * float(weights.sum())
    close = np.abs(votes) <= bound
    if close.any():  # none in 3,000 sina2018 texts; ~9% of short DXY items
        hashes = np.asarray(hashes, dtype=np.uint64)
        for i in np.flatnonzero(close):
            bit = (hashes >> np.uint64(i)) & np.uint64(1)
            votes[i] = math.fsum(np.where(bit == 1, weights, -weights).tolist())
    return int(np.packbits(votes > 0, bitorder="little").view("<u8")[0])


def simhash_votes_numpy(hashes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The 64 votes by numpy (each bit as -1.0 or +1.0, one matrix product):
    the reference the compiled loop is tested against."""
    bits = np.unpackbits(
        np.asarray(hashes, dtype="<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little"
    )
    signs = bits.astype(np.float64)
    signs *= 2.0
    signs -= 1.0
    return weights @ signs


def to_signed(value: int) -> int:
    """Unsigned 64-bit value -> PostgreSQL bigint (two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def bands(value: int) -> list[int]:
    """The :data:`BANDS` 16-bit bands of an unsigned fingerprint, low band first."""
    mask = (1 << BAND_BITS) - 1
    return [(value >> (BAND_BITS * i)) & mask for i in range(BANDS)]


def tail(value: int, band: int) -> int:
    """The tail of band ``band`` (0-3) of an unsigned fingerprint: the next two
    bands' 32 bits as a signed integer (band ``band + 1`` low, ``band + 2``
    high, mod :data:`BANDS`). ``document_simhash_bands.tail``; SQL's
    ``dedup_simhash_tail`` gives the same for the value as a bigint."""
    b = bands(value)
    t = b[(band + 1) % BANDS] | b[(band + 2) % BANDS] << BAND_BITS
    return t - (1 << 32) if t >= 1 << 31 else t


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & ((1 << 64) - 1)).bit_count()
