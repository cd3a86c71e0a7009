"""Word segmentation and term weights for SimHash.

Segmentation is jieba's (dictionary + HMM), run through ``rjieba``, its Rust
port: 0.18 ms per Sina article against 4.3 ms for pure-Python ``jieba.lcut``
(bench/throughput.py), which is the difference between hundreds and
thousands of documents per second. The tokens are jieba's except in runs of
Latin letters and digits (rjieba keeps ``www.hbea.edu.cn`` whole); that is
consistent from document to document, which is all fingerprints need.

Weights are TF-IDF with jieba's IDF table (``jieba/analyse/idf.txt``), stop
tokens and punctuation weighted 0, so that filler does not outvote a text's
topic terms. No A/B of these weights against unweighted tokens has been kept.
The nearest measurement: the ``simhash`` package over rjieba tokens counted
unweighted (punctuation included), at distance <= 3, merged 169 of 1,500
distinct Sina articles where this engine merged at most 1 (BENCHMARKS.md,
"Semantic layer"); the engine also differs there in its length-dependent
distances and its clause checks, so that is not the weights alone.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
import rjieba

from .facts import is_name

# Function words and crawler filler that carry no topic. Kept short on purpose:
# IDF already down-weights common words; these are the ones so common that
# their presence or absence only adds noise bits.
STOP_TOKENS: frozenset[str] = frozenset(
    """
    的 了 是 在 和 与 及 或 也 都 就 而 又 并 将 把 被 让 给 对 从 向 以 为 于 之 其 这 那
    这个 那个 这些 那些 一个 一些 我们 你们 他们 她们 它们 我 你 他 她 它 自己 什么 怎么
    如何 因为 所以 但是 但 而且 然而 如果 虽然 可以 已经 还 没有 不 没 很 更 最 再 只 等
    着 过 吗 呢 吧 啊 呀 嘛 哦 之一 以及 其中 通过 进行 表示 认为 目前 今年 记者 来源 编辑
    责任编辑 新浪 报道 消息 据悉 此外 同时 另外 其他 相关 方面 一下 一样 比较 非常 an a the
    of to and in is for on with by at as be this that are was it from or
    """.split()
)


# A token is a word when it holds a letter, digit or ideograph (\w is Unicode-aware).
_WORD = re.compile(r"[^\W_]")


@lru_cache(maxsize=1)
def _idf_table() -> tuple[dict[str, float], float]:
    import jieba  # only for the location of its IDF file; jieba itself is not run

    path = os.path.join(os.path.dirname(jieba.__file__), "analyse", "idf.txt")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    # "word value" a line: split once and pair them up, at half the cost of a
    # loop over lines (the table is read at the start of every ingest)
    words = text.split()
    lines = text.count("\n") + (not text.endswith("\n"))
    if len(words) == 2 * lines:
        table = dict(zip(words[0::2], map(float, words[1::2]), strict=True))
    else:  # a line without exactly one space: read line by line
        table = {}
        for line in text.split("\n"):
            word, _, value = line.partition(" ")
            if value:
                table[word] = float(value)
    values = sorted(table.values())
    return table, values[len(values) // 2]


def tokens(text: str) -> list[str]:
    """Segment ``text`` and drop punctuation, whitespace and stop tokens."""
    word = _WORD.search
    return [tok for tok in rjieba.cut(text) if tok not in STOP_TOKENS and word(tok)]


def weighted_terms(text: str) -> dict[str, float]:
    """Term -> TF-IDF weight for ``text`` (unknown terms get the median IDF)."""
    table, median_idf = _idf_table()
    counts = Counter(tokens(text))
    return {term: tf * table.get(term, median_idf) for term, tf in counts.items()}


#: Terms a :class:`TermTable` holds before it starts afresh (about 170 bytes
#: each, the term included, so at most about 85 MB: a long-running service
#: meets new names and numbers every day and must not keep all of them).
TERM_TABLE_LIMIT = 500_000


class TermTable:
    """Terms seen so far, with their IDF, 64-bit hash and name flag in numpy arrays.

    One dictionary lookup per distinct term of a document replaces four (stop
    list, IDF, hash, part of speech), and the per-document work becomes array
    indexing.

    The name flag is whether the term is a name fact (``facts.is_name``): it
    depends on the term alone, so ``rjieba.cut`` plus the flags gives the
    facts that ``rjieba.tag`` would, at half the segmentation cost. A new
    term's tag is rjieba's tag of the term alone when that leaves it whole,
    else the tag it has in the document's ``rjieba.tag`` (a term that
    segmentation in context keeps whole can split on its own: 2,464 of the
    210,576 terms of sina2018).

    It is a cache: values depend on the term only, so it is emptied when it
    reaches ``limit`` terms (RSS levels off in a long-running process). Safe
    for threads (the HTTP service fingerprints requests in parallel): terms
    are added under a lock, and a reader uses one consistent snapshot of
    (index, IDF, hashes, flags), which writers only ever extend in place or
    replace.
    """

    #: A document with more new terms than this is tagged whole (one
    #: ``rjieba.tag`` of the text) instead of term by term.
    TAG_WHOLE_TEXT = 64

    def __init__(self, limit: int = TERM_TABLE_LIMIT) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._state: tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray] = self._empty()

    @staticmethod
    def _empty() -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
        return {}, np.zeros(1024), np.zeros(1024, dtype=np.uint64), np.zeros(1024, dtype=np.int8)

    def __len__(self) -> int:
        return len(self._state[0])

    def _add(
        self, terms: Iterable[str], text: str | None
    ) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
        """Add the missing ``terms`` (words of ``text`` when given); the
        snapshot that holds all of them."""
        from .simhash import term_hash_uncached

        table, median_idf = _idf_table()
        with self._lock:
            index, idf, hashes, names = self._state
            missing = [t for t in dict.fromkeys(terms) if t not in index]
            if len(index) + len(missing) > self.limit:
                index, idf, hashes, names = self._empty()
                missing = list(dict.fromkeys(terms))
            need = len(index) + len(missing)
            if need > len(idf):
                # grow by doubling (amortized O(1) per term) into new objects,
                # so a reader holding the old snapshot stays consistent
                size = max(len(idf), 1024)
                while size < need:
                    size *= 2
                idf = np.concatenate([idf, np.zeros(size - len(idf))])
                hashes = np.concatenate([hashes, np.zeros(size - len(hashes), dtype=np.uint64)])
                names = np.concatenate([names, np.zeros(size - len(names), dtype=np.int8)])
                index = dict(index)
            tags = (
                dict(rjieba.tag(text))
                if text is not None and len(missing) > self.TAG_WHOLE_TEXT
                else None
            )
            i = len(index)
            for term in missing:
                # stop tokens and punctuation get weight 0: they are in the table
                # so that they are looked up once, and vote with nothing
                keep = term not in STOP_TOKENS and _WORD.search(term) is not None
                idf[i] = table.get(term, median_idf) if keep else 0.0
                hashes[i] = term_hash_uncached(term)
                tag = tags.get(term) if tags is not None else _tag_alone(term)
                if tag is None and text is not None:
                    tags = dict(rjieba.tag(text))
                    tag = tags.get(term)
                names[i] = -1 if tag is None else is_name(term, tag)
                index[term] = i  # after its values: a reader seeing it finds them
                i += 1
            self._state = (index, idf, hashes, names)
            return self._state

    def weights(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, TF-IDF weights) of the distinct terms of ``text``."""
        return self.term_weights(rjieba.cut(text))

    def term_weights(self, words: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, TF-IDF weights) of the distinct terms among ``words`` (a
        segmentation: ``rjieba.cut``, or the words of ``rjieba.tag``, which
        segments alike)."""
        counts = Counter(words)
        index, idf, hashes, _ = self._state
        ids = list(map(index.get, counts))
        if None in ids:
            index, idf, hashes, _ = self._add(counts, None)
            ids = list(map(index.__getitem__, counts))
        idx = np.array(ids, dtype=np.intp)
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        return hashes[idx], tf * idf[idx]

    def lookup(self, words: list[str], text: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(hashes, TF-IDF weights, name facts) of the distinct terms among
        ``words``, the ``rjieba.cut`` of ``text``. The names are those
        ``facts.tagged_facts`` would take from ``rjieba.tag(text)``, distinct,
        in text order."""
        counts = Counter(words)
        index, idf, hashes, names = self._state
        ids = list(map(index.get, counts))
        if None in ids:
            index, idf, hashes, names = self._add(counts, text)
            ids = list(map(index.__getitem__, counts))
        idx = np.array(ids, dtype=np.intp)
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        flags = names[idx]
        terms = list(counts)
        if flags.min(initial=0) < 0:  # added without a text and split when tagged alone
            tags = dict(rjieba.tag(text))
            for k in np.flatnonzero(flags < 0):
                # the same value from any text: a plain store, no lock needed
                names[ids[k]] = flags[k] = is_name(terms[k], tags[terms[k]])
        return hashes[idx], tf * idf[idx], [terms[k] for k in np.flatnonzero(flags)]


def _tag_alone(term: str) -> str | None:
    """rjieba's tag of ``term``, or None when tagging it alone splits it."""
    tagged = rjieba.tag(term)
    return tagged[0][1] if len(tagged) == 1 and tagged[0][0] == term else None


TERMS = TermTable()
