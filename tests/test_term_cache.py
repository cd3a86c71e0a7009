"""The term table kept between processes (dedup_pg.term_cache): a later process
starts from an earlier one's terms and fingerprints alike; workers save theirs;
a bad or stale file is ignored and replaced; flags taken from a text are not
passed on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dedup_pg import term_cache
from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions
from dedup_pg.tokenize import TermTable

from conftest import SHARED_DATA

#: fingerprints the first N sina2018 articles in a fresh process; prints their
#: wire form and the table's size before and after
SCRIPT = """
import json, sys
from dedup_pg import tokenize
from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions
rows = [json.loads(line) for line, _ in zip(open(sys.argv[1], encoding="utf-8"), range(int(sys.argv[2])))]
opts = NormalizeOptions()
read = []  # jieba's files read (the tables not loaded from the cache)
made = tokenize.JiebaFiles.read
tokenize.JiebaFiles.read = lambda: read.append(1) or made()
first = fingerprint(rows[0]["body"], rows[0]["title"], opts)  # loads the file, if any
loaded = tokenize.TERMS._from_file
fps = [first.wire()] + [fingerprint(r["body"], r["title"], opts).wire() for r in rows[1:]]
print(json.dumps({"loaded": loaded, "terms": len(tokenize.TERMS), "fps": fps,
                  "tables_read": len(read), "jieba_imported": "jieba" in sys.modules}))
"""


def run_fresh(folder: Path | str, n: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(SHARED_DATA / "news" / "sina2018.jsonl"), str(n)],
        env={**os.environ, term_cache.ENV: str(folder)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_a_process_starts_from_the_terms_an_earlier_one_saved(tmp_path, sina):
    cold = run_fresh(tmp_path, 80)
    assert cold["loaded"] == 0 and cold["terms"] > 5000
    files = list(tmp_path.glob("terms-*.npz"))
    assert len(files) == 1
    # jieba's tables were read from its files once, and kept beside the terms
    assert cold["tables_read"] == 1 and len(list(tmp_path.glob("jieba-*.npz"))) == 1
    warm = run_fresh(tmp_path, 80)
    # every term of the 80 articles came from the file: none was computed again
    assert warm["loaded"] == warm["terms"] == cold["terms"]
    assert warm["fps"] == cold["fps"]
    # and they are what a process without the file computes
    off = run_fresh("off", 80)
    assert off["fps"] == cold["fps"] and off["tables_read"] == 1
    # a process with the file but new terms loads jieba's tables, not its files
    more = run_fresh(tmp_path, 160)
    assert more["tables_read"] == 0 and more["fps"][:80] == cold["fps"]
    # jieba itself is never imported: only its data files are read
    assert not any(r["jieba_imported"] for r in (cold, warm, off, more))
    # a longer run adds the new articles' terms to the file
    assert more["loaded"] == cold["terms"] and more["terms"] > cold["terms"]
    assert run_fresh(tmp_path, 160)["loaded"] == more["terms"]


def test_fingerprinting_workers_save_their_terms(dsn, sina, tmp_path, monkeypatch):
    from dedup_pg import Deduper

    monkeypatch.setenv(term_cache.ENV, str(tmp_path))
    docs = [{"id": a["id"], "title": a["title"], "body": a["body"]} for a in sina[:300]]
    with Deduper(dsn) as dd:
        verdicts = list(dd.ingest_many(docs, batch_size=50, workers=2))
    assert len(verdicts) == 300
    # the workers wrote at their exit; this process fingerprinted nothing
    entries = term_cache.load()
    assert entries is not None and len(entries[0]) > 10_000


def test_a_bad_or_stale_file_is_ignored_and_replaced(tmp_path, monkeypatch, sina):
    monkeypatch.setenv(term_cache.ENV, str(tmp_path))
    path = term_cache.path()
    assert path is not None and path.parent == tmp_path
    path.write_bytes(b"not a numpy file")
    stale = tmp_path / "terms-0000000000000000.npz"
    stale.write_bytes(b"written by an older rule")
    assert term_cache.load() is None
    table = TermTable(persist=True)
    table.weights(sina[0]["body"])
    assert table._from_file == 0  # nothing read
    table.save()
    entries = term_cache.load()
    assert entries is not None and len(entries[0]) == len(table)
    assert not stale.exists()
    # read back whole: same terms, ids and values
    terms, idf, hashes, names = entries
    index, t_idf, t_hashes, t_names, _ = table._state
    assert terms == list(index)
    n = len(terms)
    assert np.array_equal(idf, t_idf[:n]) and np.array_equal(hashes, t_hashes[:n])
    assert np.array_equal(names, t_names[:n])


def test_name_flags_taken_from_a_text_are_stored_as_unknown(tmp_path, monkeypatch, sina):
    """A term that splits when tagged alone takes its name flag from the text
    it came in; the file keeps it unknown (-1) for the next process to settle
    from its own text, as that process would without the file."""
    monkeypatch.setenv(term_cache.ENV, str(tmp_path))
    table = TermTable(persist=True)
    opts = NormalizeOptions()
    for a in sina[:200]:
        table.lookup(*_cut_and_text(a, opts))
    assert table._from_text  # sina2018 has such terms (2,464 of 210,576)
    table.save()
    terms, _, _, names = term_cache.load()
    index, _, _, t_names, _ = table._state
    from_text = sorted(table._from_text)
    assert all(names[i] == -1 for i in from_text)
    others = np.setdiff1d(np.arange(len(terms)), from_text)
    assert np.array_equal(names[others], t_names[others])
    # a table started from the file gives the same facts
    again = TermTable(persist=True)
    for a in sina[:200]:
        words, text = _cut_and_text(a, opts)
        assert again.lookup(words, text)[2] == table.lookup(words, text)[2]
    assert again._from_file == len(terms)


def _cut_and_text(article: dict, opts: NormalizeOptions) -> tuple[list[str], str]:
    import rjieba

    from dedup_pg.normalize import normalize

    text = normalize(article["body"], opts).text
    return rjieba.cut(text), text


@pytest.mark.parametrize("value", ["off", "", "0", "none"])
def test_the_cache_turns_off(monkeypatch, value, sina):
    monkeypatch.setenv(term_cache.ENV, value)
    assert term_cache.cache_dir() is None and term_cache.path() is None
    table = TermTable(persist=True)
    table.weights(sina[0]["body"])
    table.save()  # nothing to write to: no error
    assert fingerprint(sina[0]["body"], sina[0]["title"], NormalizeOptions()).minhash


def test_jieba_tables_are_kept_and_a_bad_file_is_replaced(tmp_path, monkeypatch):
    from dedup_pg import tokenize

    monkeypatch.setenv(term_cache.ENV, str(tmp_path))
    path = term_cache.jieba_path()
    assert path is not None and path.parent == tmp_path
    assert term_cache.load_jieba() is None  # none kept yet
    stale = tmp_path / "jieba-0000000000000000.npz"
    stale.write_bytes(b"written under another key")
    tables = tokenize.JiebaTables.of(tokenize.JiebaFiles.read())
    assert term_cache.save_jieba(tables) == path and not stale.exists()
    kept = term_cache.load_jieba()
    assert kept is not None and kept.median_idf == tables.median_idf
    for name in ("idf_hashes", "idf", "name_hashes"):
        assert np.array_equal(getattr(kept, name), getattr(tables, name))
    # a file that cannot be read is ignored (and the next save replaces it)
    for bad in (b"not a numpy file", _npz(idf_hashes=np.zeros(3, np.uint64))):
        path.write_bytes(bad)
        assert term_cache.load_jieba() is None
    arrays = {n: getattr(tables, n) for n in ("idf_hashes", "idf", "name_hashes")}
    path.write_bytes(_npz(**{**arrays, "idf": tables.idf[:-1]}, median_idf=np.float64(1.0)))
    assert term_cache.load_jieba() is None  # IDF values and hashes of unlike lengths
    assert term_cache.save_jieba(tables) == path and term_cache.load_jieba() is not None


def _npz(**arrays: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()
