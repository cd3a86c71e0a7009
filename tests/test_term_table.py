"""The term table is shared by every thread of a process (the HTTP service
fingerprints requests in parallel) and lives as long as the process."""

import json
import sys
import threading

import numpy as np
import pytest
import rjieba

from dedup_pg import simhash as sh
from dedup_pg import tokenize
from dedup_pg.facts import is_name, tagged_facts
from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions, normalize
from dedup_pg.tokenize import TermTable, weighted_terms


def test_threads_adding_terms_at_once_get_their_own_hashes():
    # before the lock: IndexError (an array grown by one thread under another)
    # and terms holding another term's hash, so wrong SimHashes for good
    table = TermTable()
    failures = _hashes_in_threads(table, 400, lambda k, j: [f"w{k}_{j}_{m}" for m in range(20)])
    assert failures == []
    assert len(table) == 8 * 400 * 20


def test_threads_meeting_a_table_that_starts_afresh_get_their_own_hashes():
    # a lookup keeps the ids it read of known terms and looks up only the new
    # ones again: a table started afresh (full) by another thread in between
    # renumbers every term, and ids of the old numbering must not be kept
    table = TermTable(limit=300)
    shared = [f"s{m}" for m in range(10)]

    def words(k, j):
        # new words first: after a start afresh they take the ids the shared
        # ones had
        return [f"w{k}_{j}_{m}" for m in range(10)] + shared[j % 10 :] + shared[: j % 10]

    assert _hashes_in_threads(table, 300, words) == []
    assert table._renumbered >= 8 * 300 * 10 // 300  # it did start afresh, often


def _hashes_in_threads(table, rounds, words_of, threads=8):
    """Each of ``threads`` threads, all at once and switching as often as
    Python can, looks up ``words_of(k, j)`` for j < ``rounds`` (k: the
    thread); the word lists whose hashes came back wrong, and the errors."""
    failures = []

    def work(k):
        try:
            for j in range(rounds):
                words = words_of(k, j)
                hashes, _ = table.term_weights(words)
                expected = np.array([sh.term_hash(w) for w in words], dtype=np.uint64)
                if not np.array_equal(hashes, expected):
                    failures.append(words)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(repr(exc))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        running = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in running:
            t.start()
        for t in running:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return failures


@pytest.mark.parametrize("kind", ["article", "hostile"])
def test_the_compiled_count_is_a_counters(sina, kind):
    # distinct words in order of first occurrence with their counts, as
    # Counter gives them, whether the words are cut at the NUL the kernels put
    # between them or, where a word holds one or is empty, by their lengths
    from collections import Counter

    from dedup_pg import _terms_jit

    kernels = _terms_jit.kernels()
    if kind == "article":
        texts = [rjieba.cut(a["body"]) for a in sina[:50]]
    else:
        texts = [
            ["a\x00b", "a", "\x00", "a\x00b", "", "", "b"],
            ["\ud800", "x", "\ud800", "𠀀𠀁", "𠀀", "𠀀𠀁"],
            [],
            ["同"] * 500 + ["一"],
            ["", "a", "", "b", ""],  # empty words between the NULs the words are joined by
        ]
    index = _terms_jit.Index.holding(10)
    for words in texts:
        keys, ids, counts, first = kernels.distinct_ids(words, index)
        expected = Counter(words)
        assert [words[k] for k in first] == list(expected)
        assert counts.tolist() == list(expected.values())
        assert (ids == -1).all()  # an empty index
        assert np.array_equal(kernels.word_hashes(list(expected)), keys)
    # found once inserted, by id
    words = texts[0]
    keys, _, _, first = kernels.distinct_ids(words, index)
    index = index.copy(len(keys), kernels)
    kernels.insert(index, keys, np.arange(len(keys)) + 7)
    assert kernels.distinct_ids(words, index)[1].tolist() == list(range(7, 7 + len(keys)))
    grown = index.copy(10 * len(keys), kernels)
    assert kernels.distinct_ids(words, grown)[1].tolist() == list(range(7, 7 + len(keys)))


def test_a_full_table_starts_afresh_with_the_same_values(sina):
    table = TermTable(limit=2000)
    body = sina[0]["body"]
    first = sh.simhash_arrays(*table.weights(body))
    for article in sina[1:40]:
        table.weights(article["body"])
        assert len(table) <= 2000 + 2000  # a document's terms are added whole
    assert sh.simhash_arrays(*table.weights(body)) == first == sh.simhash(weighted_terms(body))


def _names_from_tags(text):
    return list(dict.fromkeys(w for w, t in rjieba.tag(text) if is_name(w, t)))


@pytest.mark.parametrize(
    "how",
    ["tagged alone", "whole text tagged", "added without a text first"],
)
def test_lookup_names_are_the_tagged_names(sina, how, monkeypatch):
    # the name flag per term stands in for rjieba.tag; every way a term gets
    # its flag must give the tag's answer, including the terms that split when
    # tagged alone (2,464 of sina2018's 210,576): from the stretch of text
    # around them, or ("whole text tagged") from the whole text's tags
    table = TermTable()
    if how == "whole text tagged":
        monkeypatch.setattr(tokenize._Places, "TRIES", 0)
    split = 0
    for article in sina[:300]:
        text = article["body"]
        words = rjieba.cut(text)
        if how == "added without a text first":
            table.term_weights(words)
        hashes, weights, names = table.lookup(words, text)
        assert names == _names_from_tags(text)
        assert np.array_equal(hashes, table.term_weights(words)[0])
        split += sum(1 for w in set(words) if [x for x, _ in rjieba.tag(w)] != [w])
    assert split > 0  # the fallback was needed


def test_name_flags_tag_each_term_as_if_alone(sina):
    # a dictionary word takes its dictionary tag; one rjieba.tag of the other
    # candidate terms joined by newlines gives each the tag it has alone: every
    # term of these articles, against tagging it alone
    terms = list(dict.fromkeys(w for a in sina[:400] for w in rjieba.cut(a["body"])))
    flags = tokenize._name_flags(terms, None)
    names = tokenize._dictionary_names()
    split_names = 0
    for term, flag in zip(terms, flags, strict=True):
        tagged = rjieba.tag(term)
        if len(tagged) == 1 and tagged[0][0] == term:
            assert flag == is_name(term, tagged[0][1]), term
        elif term in names:
            assert flag == 1, term  # split alone, a name wherever it is cut whole
            split_names += 1
        else:
            assert flag in (-1, 0), term  # split alone: settled by a text later
    assert -1 in flags and 1 in flags and split_names > 0


def _dictionary():
    with open(tokenize.jieba_file(tokenize.DICTIONARY_FILE), encoding="utf-8") as fh:
        return [line.split(" ") for line in fh.read().splitlines()]


def test_dictionary_words_are_tagged_with_their_dictionary_tag():
    # what _dictionary_names rests on: rjieba knows every word of jieba's
    # dictionary, and one it cuts whole gets the dictionary's tag (every 7th
    # word of the 349,046; all of them were checked once, none differed)
    entries = _dictionary()
    names = tokenize._dictionary_names()
    assert len(entries) > 300_000 and len(names) > 100_000
    whole = 0
    for word, _freq, tag in entries[::7]:
        assert rjieba.has_word(word), word
        assert (word in names) == is_name(word, tag), word
        tagged = rjieba.tag(word)
        if len(tagged) == 1:
            assert tagged[0] == (word, tag), word
            whole += 1
    assert whole > 40_000


def test_term_hashes_are_the_term_hash():
    terms = ["北京", "a", "", "\u3000", "😀x", "iPhone16"]
    assert sh.term_hashes(terms).tolist() == [sh.term_hash_uncached(t) for t in terms]


def test_fingerprint_facts_are_the_tagged_facts(sina):
    for article in sina[:200]:
        text = normalize(article["body"], NormalizeOptions()).text
        assert list(fingerprint(article["body"], None, NormalizeOptions()).facts) == (
            tagged_facts(text, rjieba.tag(text))
        )


def test_idf_table_is_the_file_read_line_by_line():
    # _idf_table pairs the file's words up in one split: the same table as
    # reading "word value" line by line, and the same median
    from dedup_pg.tokenize import _idf_table

    expected = {}
    with open(tokenize.jieba_file(tokenize.IDF_FILE), encoding="utf-8") as fh:
        for line in fh:
            word, _, value = line.rstrip("\n").partition(" ")
            if value:
                expected[word] = float(value)
    table, median = _idf_table()
    assert table == expected
    assert median == sorted(expected.values())[len(expected) // 2]


def test_jieba_tables_are_the_files(sina):
    # JiebaTables holds jieba's files (JiebaFiles) by term hash: every word of
    # each reads back its value, no two words share a hash, a word outside the
    # files gets the median IDF and no name, and both forms agree on the
    # terms of real articles
    from dedup_pg.tokenize import JiebaFiles, JiebaTables

    files = JiebaFiles.read()
    tables = JiebaTables.of(files)
    words = list(files.idf)
    hashes = sh.term_hashes(words)
    assert len(np.unique(hashes)) == len(words) == len(tables.idf_hashes)
    assert tables.idf_of(words, hashes).tolist() == list(files.idf.values())
    assert tables.median_idf == files.median_idf
    entries = [word for word, _freq, _tag in _dictionary()]
    flags = tables.dictionary_names(entries, sh.term_hashes(entries))
    assert flags.tolist() == [word in files.names for word in entries]
    assert len(np.unique(tables.name_hashes)) == len(files.names) > 100_000
    outside = ["zz不在词表里zz", "", "\u3000"]
    assert not any(w in files.idf for w in outside)
    assert tables.idf_of(outside, sh.term_hashes(outside)).tolist() == [files.median_idf] * 3
    assert not tables.dictionary_names(outside, sh.term_hashes(outside)).any()
    terms = list(dict.fromkeys(w for a in sina[:300] for w in rjieba.cut(a["body"]))) + outside
    hashes = sh.term_hashes(terms)
    for form in ("idf_of", "dictionary_names"):
        got = getattr(tables, form)(terms, hashes)
        assert got.tolist() == getattr(files, form)(terms, hashes).tolist(), form


def test_a_batch_orjson_refuses_is_sent_as_json_writes_it():
    from dedup_pg.deduper import _dump_items

    rows = [{"body": "北京\ud800", "n": 2**70}]
    assert _dump_items(rows) == json.dumps(rows).encode("ascii")
    assert _dump_items([{"body": "北京"}]) == '[{"body":"北京"}]'.encode()
