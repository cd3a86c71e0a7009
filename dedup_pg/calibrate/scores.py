"""All-pairs scores of a sample, per layer (no I/O): SimHash Hamming distances,
clause containment as the engine counts it, embedding cosines; each row's nearest
neighbour."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np


def popcount64(values: np.ndarray) -> np.ndarray:
    """Set bits of each 64-bit value (numpy >= 2 has it built in)."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values).astype(np.uint8)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
    as_bytes = values.view(np.uint8).reshape(*values.shape, 8)
    return table[as_bytes].sum(axis=-1, dtype=np.uint8)


def simhash_distances(hashes: Sequence[int] | np.ndarray) -> np.ndarray:
    """All-pairs Hamming distances (uint8, n x n) of 64-bit fingerprints, signed
    (as PostgreSQL stores them) or unsigned."""
    arr = np.asarray([int(h) & 0xFFFFFFFFFFFFFFFF for h in hashes], dtype=np.uint64)
    return popcount64(arr[:, None] ^ arr[None, :])


def cosine_similarities(vectors: np.ndarray) -> np.ndarray:
    """All-pairs cosines (float32, n x n) of row vectors."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.maximum(norms, np.float32(1e-12))
    return np.clip(v @ v.T, -1.0, 1.0)


def containment_scores(
    clause_sets: Sequence[Sequence[int]], *, min_shared: int = 3, boilerplate_docs: int = 5
) -> np.ndarray:
    """All-pairs clause containment (float32, n x n): shared clauses over the
    smaller text's clause count, 0 below ``min_shared`` shared clauses (all of the
    smaller text's when it has fewer, never fewer than 2), clauses held by
    ``boilerplate_docs`` or more texts of the sample ignored (site boilerplate), as
    the engine's containment layer counts it. Built from an inverted index, so the
    cost follows the shared clauses, not n squared."""
    n = len(clause_sets)
    holders: dict[int, list[int]] = {}
    for i, clauses in enumerate(clause_sets):
        for h in set(clauses):
            holders.setdefault(h, []).append(i)
    sizes = np.zeros(n, dtype=np.int32)
    shared: Counter[tuple[int, int]] = Counter()
    for docs in holders.values():
        if len(docs) >= boilerplate_docs:
            continue
        for i in docs:
            sizes[i] += 1
        for x in range(len(docs)):
            for y in range(x + 1, len(docs)):
                shared[docs[x], docs[y]] += 1
    out = np.zeros((n, n), dtype=np.float32)
    for (i, j), count in shared.items():
        smaller = min(sizes[i], sizes[j])
        need = max(2, min(min_shared, smaller))
        if smaller and count >= need:
            out[i, j] = out[j, i] = count / smaller
    np.fill_diagonal(out, 1.0)
    return out


def nearest_neighbours(
    matrix: np.ndarray, *, lower_is_closer: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best score against the other rows, and whose it is."""
    m = np.array(matrix, dtype=np.float64 if lower_is_closer else np.float32, copy=True)
    np.fill_diagonal(m, np.inf if lower_is_closer else -np.inf)
    best = m.argmin(axis=1) if lower_is_closer else m.argmax(axis=1)
    return m[np.arange(len(m)), best], best


def upper_pairs(matrix: np.ndarray) -> np.ndarray:
    """The scores of all unordered pairs (upper triangle without the diagonal)."""
    return np.asarray(matrix)[np.triu_indices(len(matrix), k=1)]
