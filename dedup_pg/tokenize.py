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

import bisect
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import rjieba

from . import _terms_jit as _jit
from .facts import NAME_TAGS, is_name

#: One consistent state of a :class:`TermTable`: term -> id, and by id the
#: IDF, the term hash and the name flag, and the index from word hash to id
_Snapshot = tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, _jit.Index]


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


#: jieba's data files read here (jieba itself is not run): the IDF table and
#: the dictionary (word, frequency, tag a line)
IDF_FILE = ("analyse", "idf.txt")
DICTIONARY_FILE = ("dict.txt",)


def jieba_file(parts: tuple[str, ...]) -> str:
    """The path of one of jieba's data files (``IDF_FILE``, ``DICTIONARY_FILE``),
    found without importing jieba (its import runs ~0.15 s of setup that
    nothing here uses)."""
    import importlib.util

    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("jieba is not installed: its data files are needed", name="jieba")
    return os.path.join(os.path.dirname(spec.origin), *parts)


def _idf_table() -> tuple[dict[str, float], float]:
    """jieba's IDF file as read: term -> IDF, and the median IDF (what a term
    outside it gets). :class:`JiebaFiles` holds it."""
    with open(jieba_file(IDF_FILE), encoding="utf-8") as fh:
        text = fh.read()
    # "word value" a line: split once and pair them up, at half the cost of a
    # loop over lines
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


class JiebaFiles(NamedTuple):
    """What a new term's values are read from, as jieba's text files give them:
    its IDF table (:func:`_idf_table`) and the name words of its dictionary
    (:func:`_dictionary_names`). Reading them costs a process ~0.4 s and ~35
    MB; :class:`JiebaTables` holds the same by term hash, for the cache folder."""

    idf: dict[str, float]
    median_idf: float
    names: frozenset[str]

    @classmethod
    def read(cls) -> JiebaFiles:
        table, median = _idf_table()
        return cls(table, float(median), _dictionary_names())

    def idf_of(self, terms: list[str], hashes: np.ndarray) -> np.ndarray:
        """The IDF of each term (the median for a term outside the file)."""
        get, median = self.idf.get, self.median_idf
        return np.array([get(t, median) for t in terms], dtype=np.float64)

    def dictionary_names(self, terms: list[str], hashes: np.ndarray) -> np.ndarray:
        """Whether each term is a name word of the dictionary."""
        names = self.names
        return np.array([t in names for t in terms], dtype=bool)


class JiebaTables(NamedTuple):
    """:class:`JiebaFiles` by term hash (:func:`simhash.term_hashes`, which
    :class:`TermTable` computes for every new term anyway), as sorted arrays:
    what the cache folder keeps (:func:`term_cache.load_jieba`), loaded in a
    few ms where reading jieba's files costs ~0.4 s. A term hash shared by
    two words (64 bits: about one chance in 10^13 for a new term to meet one
    of the 380k) would give the new term the other's values; none is shared
    among the files' words (tests/test_term_table.py)."""

    idf_hashes: np.ndarray  # uint64, sorted: the IDF file's words
    idf: np.ndarray  # float64, the IDF of each of idf_hashes
    median_idf: float  # the IDF of a term outside the file
    name_hashes: np.ndarray  # uint64, sorted: the dictionary's name words

    @classmethod
    def of(cls, files: JiebaFiles) -> JiebaTables:
        """The tables holding what ``files`` holds."""
        from .simhash import term_hashes

        hashes = term_hashes(list(files.idf))
        order = np.argsort(hashes, kind="stable")
        idf = np.fromiter(files.idf.values(), dtype=np.float64, count=len(files.idf))
        names = np.sort(term_hashes(sorted(files.names)))
        return cls(hashes[order], idf[order], files.median_idf, names)

    def idf_of(self, terms: list[str], hashes: np.ndarray) -> np.ndarray:
        """The IDF of each term, by its hash (the median for a term outside the file)."""
        at = _positions(self.idf_hashes, hashes)
        return np.where(self.idf_hashes[at] == hashes, self.idf[at], self.median_idf)

    def dictionary_names(self, terms: list[str], hashes: np.ndarray) -> np.ndarray:
        """Whether each term, by its hash, is a name word of the dictionary."""
        return self.name_hashes[_positions(self.name_hashes, hashes)] == hashes


def _positions(sorted_hashes: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Where each of ``hashes`` is or would be in ``sorted_hashes`` (not
    empty), kept inside it."""
    return np.minimum(np.searchsorted(sorted_hashes, hashes), len(sorted_hashes) - 1)


@lru_cache(maxsize=1)
def jieba_tables() -> JiebaTables | JiebaFiles:
    """What the process reads new terms' values from: the :class:`JiebaTables`
    the cache folder keeps, else made from jieba's files and kept there; with
    the cache off (``DEDUP_PG_TERM_CACHE=off``), jieba's files as read
    (:class:`JiebaFiles`: hashing them for nowhere to keep them would cost
    ~0.4 s more)."""
    from . import term_cache

    if term_cache.jieba_path() is None:
        return JiebaFiles.read()
    tables = term_cache.load_jieba()
    if tables is None:
        tables = JiebaTables.of(JiebaFiles.read())
        term_cache.save_jieba(tables)
    return tables


def tokens(text: str) -> list[str]:
    """Segment ``text`` and drop punctuation, whitespace and stop tokens."""
    word = _WORD.search
    return [tok for tok in rjieba.cut(text) if tok not in STOP_TOKENS and word(tok)]


def weighted_terms(text: str) -> dict[str, float]:
    """Term -> TF-IDF weight for ``text`` (unknown terms get the median IDF)."""
    from .simhash import term_hashes

    counts = Counter(tokens(text))
    terms = list(counts)
    idf = jieba_tables().idf_of(terms, term_hashes(terms)) if terms else []
    return {term: counts[term] * float(w) for term, w in zip(terms, idf, strict=True)}


#: Terms a :class:`TermTable` holds before it starts afresh (about 195 bytes
#: each, the term and 25 bytes of index included, so at most about 100 MB: a
#: long-running service meets new names and numbers every day and must not
#: keep all of them).
TERM_TABLE_LIMIT = 500_000


class TermTable:
    """Terms seen so far, with their IDF, 64-bit hash and name flag in numpy arrays.

    One lookup per distinct term of a document replaces four (stop list, IDF,
    hash, part of speech), and the per-document work becomes array indexing.
    The words are counted and looked up by compiled loops
    (:mod:`dedup_pg._terms_jit`: an index from each word's 64-bit hash to its
    id, beside the dict from term to id that new terms are checked against
    and the term cache file is written from).

    The name flag is whether the term is a name fact (``facts.is_name``): it
    depends on the term alone, so ``rjieba.cut`` plus the flags gives the
    facts that ``rjieba.tag`` would, at half the segmentation cost. New terms
    that could be names are tagged together, each as if alone
    (:func:`_name_flags`); a term that splits when tagged alone (2,464 of the
    210,576 terms of sina2018) takes its tag from the stretch of the document
    that holds it (:class:`_Places`).

    It is a cache: values depend on the term only, so it is emptied when it
    reaches ``limit`` terms (RSS levels off in a long-running process). With
    ``persist``, it starts from the terms earlier processes saw and gives them
    its own when the process ends (:mod:`dedup_pg.term_cache`). Safe for
    threads (the HTTP service fingerprints requests in parallel): terms
    are added under a lock, and a reader uses one consistent snapshot of
    (terms, IDF, hashes, flags, index), which writers only ever extend in
    place or replace (the index with the arrays: an id found in an index is
    inside the arrays of its snapshot).
    """

    def __init__(self, limit: int = TERM_TABLE_LIMIT, *, persist: bool = False) -> None:
        self.limit = limit
        self.persist = persist
        self._lock = threading.Lock()
        self._state: _Snapshot = self._empty()
        self._loaded = False  # the file read (persist) on the first new term
        self._from_file = 0  # terms the file gave, the first ids
        self._from_text: set[int] = set()  # ids whose name flag came from a text
        self._read: tuple[int, int, int] | None = None  # the file's stamp when read
        # times the ids changed (the file loaded, the table started afresh):
        # raised after the new snapshot is in place (see _ids)
        self._renumbered = 0

    def _load(self) -> None:
        """The file's terms as the table (called under the lock, on the first
        new term, so a process that meets none never reads the file)."""
        import atexit

        from . import term_cache

        self._loaded = True
        atexit.register(self.save)
        read = term_cache.stamp()
        entries = term_cache.load()
        if entries is None or not 0 < len(entries[0]) <= self.limit:
            return
        terms = entries[0]
        n = len(terms)
        arrays = self._grown(*self._empty()[1:4], n)
        for arr, values in zip(arrays, entries[1:], strict=True):
            arr[:n] = values
        slots = _jit.Index.holding(n)
        kernels = _jit.kernels()
        kernels.insert(slots, kernels.word_hashes(terms), np.arange(n))
        self._state = (dict(zip(terms, range(n), strict=True)), *arrays, slots)
        self._from_file, self._read = n, read

    def save(self) -> None:
        """Merge the terms this process added into the file (``persist``
        only; nothing when it added none). A failure is logged, not raised:
        it only loses cache entries."""
        if not self.persist:
            return
        from . import term_cache

        with self._lock:
            index, idf, hashes, names, _ = self._state
            n = len(index)
            if n <= self._from_file:
                return
            flags = names[:n].copy()
            flags[list(self._from_text)] = -1  # settled from a text: unknown to others
            entries = (list(index), idf[:n].copy(), hashes[:n].copy(), flags)
            # the table began as the file's contents (not started afresh since)
            read = self._read if self._from_file else None
        try:
            term_cache.merge(entries, self.limit, read)
            with self._lock:
                if self._state[0] is index:  # not started afresh meanwhile
                    self._from_file, self._read = max(self._from_file, n), term_cache.stamp()
        except Exception:  # noqa: BLE001 - a cache: losing it is not an error
            logging.getLogger(__name__).warning("term cache not written", exc_info=True)

    @staticmethod
    def _grown(
        idf: np.ndarray, hashes: np.ndarray, names: np.ndarray, need: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays with room for ``need`` terms, grown by doubling
        (amortized O(1) per term) into new objects, so a reader holding the
        old snapshot stays consistent."""
        size = max(len(idf), 1024)
        while size < need:
            size *= 2
        return (
            np.concatenate([idf, np.zeros(size - len(idf))]),
            np.concatenate([hashes, np.zeros(size - len(hashes), dtype=np.uint64)]),
            np.concatenate([names, np.zeros(size - len(names), dtype=np.int8)]),
        )

    @staticmethod
    def _empty() -> _Snapshot:
        return (
            {},
            np.zeros(1024),
            np.zeros(1024, dtype=np.uint64),
            np.zeros(1024, dtype=np.int8),
            _jit.Index.holding(1024),
        )

    def __len__(self) -> int:
        return len(self._state[0])

    def _add(
        self,
        new: list[str],
        new_keys: np.ndarray,
        words: list[str],
        first: np.ndarray,
        text: str | None,
    ) -> _Snapshot:
        """Add those of ``new`` (distinct terms, their word hashes
        ``new_keys``) still missing, all among ``words`` (whose distinct
        terms start at positions ``first``; words of ``text`` when given); the
        snapshot that holds all of them. A new term costs one list entry per
        array (filled in slices, not element by element), an index slot and,
        when it could be a name, its share of one ``rjieba.tag`` of all such
        terms."""
        from .simhash import term_hashes

        tables = jieba_tables()
        kernels = _jit.kernels()
        with self._lock:
            renumbered = False
            if self.persist and not self._loaded:
                self._load()
                renumbered = True
            index, idf, hashes, names, slots = self._state
            missing_at = [k for k, t in enumerate(new) if t not in index]
            missing = [new[k] for k in missing_at]
            keys = new_keys[missing_at]
            if len(index) + len(missing) > self.limit:
                index, idf, hashes, names, slots = self._empty()
                missing = [words[k] for k in first.tolist()]
                keys = kernels.word_hashes(missing)
                self._from_file, self._from_text = 0, set()
                renumbered = True
            need = len(index) + len(missing)
            grow = need > len(idf)
            if grow:
                idf, hashes, names = self._grown(idf, hashes, names, need)
                index = dict(index)
            if grow or not slots.room_for(need):
                # new arrays, a new index: a reader of the old snapshot finds
                # no id beyond its arrays
                slots = slots.copy(need, kernels)
            first_id, last_id = len(index), need
            word = _WORD.search
            new_hashes = term_hashes(missing)
            weights = tables.idf_of(missing, new_hashes)
            # stop tokens and punctuation get weight 0: they are in the table
            # so that they are looked up once, and vote with nothing
            weights[[k for k, t in enumerate(missing) if t in STOP_TOKENS or not word(t)]] = 0.0
            idf[first_id:last_id] = weights
            hashes[first_id:last_id] = new_hashes
            from_text: list[int] = []
            names[first_id:last_id] = _name_flags(missing, text, from_text, new_hashes)
            self._from_text.update(first_id + k for k in from_text)
            # after their values: a reader seeing a term finds them
            kernels.insert(slots, keys, np.arange(first_id, last_id))
            index.update(zip(missing, range(first_id, last_id), strict=True))
            self._state = (index, idf, hashes, names, slots)
            if renumbered:
                self._renumbered += 1
            return self._state

    def _ids(
        self, words: list[str], text: str | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Snapshot]:
        """The distinct terms among ``words``, in order of first occurrence:
        their ids in the snapshot returned with them (new terms added),
        their counts and the position of each one's first occurrence in
        ``words`` (:meth:`_terms_jit.TermKernels.distinct_ids`). Only the new
        terms are looked up again after they are added, unless the ids
        changed meanwhile: the count of renumberings is read before the
        snapshot and raised after a new one is in place, so ids read from a
        snapshot older than a renumbering are never kept with a newer one."""
        renumbered = self._renumbered
        state = self._state
        kernels = _jit.kernels()
        keys, ids, counts, first = kernels.distinct_ids(words, state[4])
        missing = np.flatnonzero(ids < 0)
        if len(missing):
            new = [words[k] for k in first[missing].tolist()]
            state = self._add(new, keys[missing], words, first, text)
            if self._renumbered != renumbered:
                ids = kernels.distinct_ids(words, state[4])[1]
            else:
                get = state[0].__getitem__
                ids[missing] = [get(t) for t in new]
        return ids, counts, first, state

    def weights(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, TF-IDF weights) of the distinct terms of ``text``."""
        return self.term_weights(rjieba.cut(text))

    def term_weights(self, words: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, TF-IDF weights) of the distinct terms among ``words`` (a
        segmentation: ``rjieba.cut``, or the words of ``rjieba.tag``, which
        segments alike)."""
        ids, counts, _, (_, idf, hashes, _, _) = self._ids(list(words), None)
        return hashes[ids], counts * idf[ids]

    def lookup(self, words: list[str], text: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(hashes, TF-IDF weights, name facts) of the distinct terms among
        ``words``, the ``rjieba.cut`` of ``text``, in order of first
        occurrence. The names are those ``facts.tagged_facts`` would take from
        ``rjieba.tag(text)``, distinct, in text order."""
        ids, counts, first, (_, idf, hashes, names, _) = self._ids(words, text)
        flags = names[ids]
        if flags.min(initial=0) < 0:  # added without a text and split when tagged alone
            tags = dict(rjieba.tag(text))
            for k in np.flatnonzero(flags < 0):
                term = words[first[k]]
                # the same value from any text: a plain store, no lock needed
                names[ids[k]] = flags[k] = is_name(term, tags[term])
                self._from_text.add(int(ids[k]))
        return hashes[ids], counts * idf[ids], [words[first[k]] for k in np.flatnonzero(flags)]


def _dictionary_names() -> frozenset[str]:
    """The words of jieba's dictionary (``jieba/dict.txt``: word, frequency,
    tag a line) whose tag makes them a name fact (:func:`facts.is_name`).

    rjieba (jieba-rs) carries the same dictionary: it tags a word of its
    dictionary with the dictionary's tag wherever the word is cut, and guesses
    a tag (posseg HMM) only for words outside it. So a dictionary word's name
    flag is read here, without tagging; every word of the file is one of
    rjieba's (``has_word``) with the same tag when tagged alone (checked on all
    349,046; tests/test_term_table.py checks the flags against ``rjieba.tag``).
    ~111,000 words (:class:`JiebaTables` keeps their hashes)."""
    with open(jieba_file(DICTIONARY_FILE), encoding="utf-8") as fh:
        text = fh.read()
    tags = "|".join(sorted(NAME_TAGS))
    found = re.findall(rf"^(\S{{2,}}) \d+ (?:{tags})$", text, re.M)
    return frozenset(word for word in found if not word.isascii())


def _name_flags(
    terms: list[str],
    text: str | None,
    from_text: list[int] | None = None,
    hashes: np.ndarray | None = None,
) -> list[int]:
    """The name flag of each of ``terms`` (``facts.is_name`` of the term and its
    tag): 1 or 0, or -1 when tagging the term alone splits it and there is no
    ``text`` whose tagging holds it whole (``TermTable.lookup`` settles those).
    The positions whose flag came from ``text`` are appended to ``from_text``.

    Only a term of two or more characters, not all ASCII, can be a name. A
    word of jieba's dictionary has its dictionary tag
    (:func:`_dictionary_names`); the others are tagged, all in one ``rjieba.tag`` call with a newline
    between them: a newline ends jieba's blocks, so each term is cut and
    tagged as it would be alone (checked on every term of sina2018; the tests
    check 400 articles' terms), at one
    call's overhead instead of one per term."""
    flags = [0] * len(terms)
    if not terms:
        return flags
    # a word of jieba's dictionary takes the dictionary's tag wherever it is
    # cut: it needs no tagging (two thirds of a crawl's new terms)
    if hashes is None:
        from .simhash import term_hashes

        hashes = term_hashes(terms)
    in_names = jieba_tables().dictionary_names(terms, hashes).tolist()
    has_word = rjieba.has_word
    could = []
    for k, t in enumerate(terms):
        if len(t) >= 2 and not t.isascii():
            if in_names[k]:
                flags[k] = 1
            elif not has_word(t):
                could.append(k)
    if not could:
        return flags
    joined = "\n".join(terms[k] for k in could)
    tags: list[str | None] = [None] * len(could)
    # walk the tagged words by their offsets in ``joined``: a term tagged
    # alone is one word starting where the term starts and ending where it ends
    j, start, pos = 0, 0, 0
    end = len(terms[could[0]])
    for w, tag in rjieba.tag(joined):
        if pos == start and pos + len(w) == end:
            tags[j] = tag
        pos += len(w)
        while pos >= end + 1 and j + 1 < len(could):
            j += 1
            start = end + 1
            end = start + len(terms[could[j]])
    place: _Places | None = None
    for j, k in enumerate(could):
        term, tag = terms[k], tags[j]
        if tag is None and text is not None:
            place = place or _Places(text)
            tag = place.tag(term)
            if tag is not None and from_text is not None:
                from_text.append(k)
        flags[k] = -1 if tag is None else is_name(term, tag)
    return flags


#: Characters jieba never puts in a block it segments (its blocks are runs of
#: ideographs, ASCII letters and digits, and ``+#&._%-``): what is cut on one
#: side of such a character does not depend on the other side.
_BLOCK_END = re.compile(r"[^\w+#&.%\-]")


class _Places:
    """Tags of words of one text as its segmentation holds them, read from
    the stretch around an occurrence (between characters that end jieba's
    blocks) rather than from tagging the whole text; the whole text's tags
    once when a few stretches did not hold the word whole."""

    TRIES = 3

    def __init__(self, text: str) -> None:
        self.text = text
        self.ends = [m.start() for m in _BLOCK_END.finditer(text)]
        self.whole: dict[str, str] | None = None

    def tag(self, term: str) -> str | None:
        text, ends = self.text, self.ends
        at = text.find(term)
        for _ in range(self.TRIES):
            if at < 0:
                return None
            i = bisect.bisect_left(ends, at)  # the first block end at or after ``at``
            start = ends[i - 1] + 1 if i > 0 else 0
            j = bisect.bisect_left(ends, at + len(term), i)
            end = ends[j] if j < len(ends) else len(text)
            pos = start
            for w, tag in rjieba.tag(text[start:end]):
                if pos == at and w == term:
                    return tag
                pos += len(w)
            at = text.find(term, at + 1)
        if self.whole is None:
            self.whole = dict(rjieba.tag(text))
        return self.whole.get(term)


#: The process's table: persisted (dedup_pg.term_cache) unless DEDUP_PG_TERM_CACHE=off.
TERMS = TermTable(persist=True)
