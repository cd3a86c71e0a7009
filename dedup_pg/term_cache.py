"""The term table kept between processes: a file of terms and their values.

A fresh process meets every term for the first time: its IDF, hash and name
flag are computed then (``TermTable._add``), which makes a process's first
documents cost about twice what later ones do (bench/peers.py's stream: 4.6
ms a document over the first 500 against ~2 ms warm). ``dedup-pg ingest``
called once per crawl batch, and each fingerprinting worker, paid that every
time. The values depend on the term alone, so a process starts from the
terms earlier processes saw: it loads this file on its first new term and,
when it has added terms, merges them into the file when it ends.

The file is ``terms-KEY.npz`` in the cache folder (``DEDUP_PG_TERM_CACHE``,
else the per-user cache folder, ``platformdirs.user_cache_dir("dedup-pg")``;
``DEDUP_PG_TERM_CACHE=off`` turns it off). KEY hashes what the values depend
on: the rjieba and jieba versions, jieba's IDF file and dictionary (their size and time) and
the source of the modules that compute them (tokenize, simhash, facts), so a changed rule never reads values
an older one wrote; files of other keys are removed when one is written.
Writers merge under a lock file (POSIX ``flock``; elsewhere the last writer
wins, which only loses cache entries). A file that cannot be read is
ignored and rewritten. Name flags a term took from the text around it (a
term that splits when tagged alone) are stored as unknown, so a later
process settles them from its own text, as it would without the file.

Beside it, ``jieba-KEY.npz`` (same key) keeps :class:`tokenize.JiebaTables`,
what a new term's values are read from: jieba's IDF table and its
dictionary's name words, by term hash. Read from jieba's text files they
cost every process ~0.4 s; loaded from the file, a few ms.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

ENV = "DEDUP_PG_TERM_CACHE"
_OFF = ("", "0", "off", "none", "false")
_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .tokenize import JiebaTables


def cache_dir() -> Path | None:
    """Where the file is kept, or None when the cache is off."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("dedup-pg"))


@lru_cache(maxsize=1)
def cache_key() -> str:
    """What the stored values depend on, hashed (16 hex digits)."""
    from importlib.metadata import version

    from . import facts, simhash, tokenize

    h = hashlib.sha1()
    h.update(f"{version('rjieba')} {version('jieba')}".encode())
    # jieba's IDF file and dictionary (the name flags of its words are read
    # from it) by their size and time (tokenize reads them once already; a
    # reinstall that only touches them costs a cache miss, nothing more)
    for parts in (tokenize.IDF_FILE, tokenize.DICTIONARY_FILE):
        st = os.stat(tokenize.jieba_file(parts))
        h.update(f"{st.st_size} {st.st_mtime_ns}".encode())
    for module in (tokenize, simhash, facts):
        h.update(Path(module.__file__).read_bytes())  # type: ignore[arg-type]
    return h.hexdigest()[:16]


def path() -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"terms-{cache_key()}.npz"


Entries = tuple[list[str], np.ndarray, np.ndarray, np.ndarray]


def stamp() -> tuple[int, int, int] | None:
    """The file's identity (inode, size, mtime), or None when there is none:
    a writer whose file has not changed since it read it writes its table
    as it is, without reading the file again."""
    file = path()
    try:
        st = file.stat() if file is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)


def load() -> Entries | None:
    """(terms, IDF, hashes, name flags) from the file, or None."""
    file = path()
    if file is None or not file.is_file():
        return None
    try:
        with np.load(file, allow_pickle=False) as data:
            terms = orjson.loads(data["terms"].tobytes())
            idf, hashes, names = data["idf"], data["hashes"], data["names"]
        n = len(terms)
        if not (isinstance(terms, list) and len(idf) == len(hashes) == len(names) == n):
            raise ValueError("arrays of different lengths")
        return terms, idf.astype(np.float64), hashes.astype(np.uint64), names.astype(np.int8)
    except Exception as exc:  # noqa: BLE001 - a cache: a bad file is only ignored
        _log.warning("term cache %s not read (%s); it is rewritten", file, exc)
        return None


def jieba_path() -> Path | None:
    """Where :class:`tokenize.JiebaTables` are kept (``jieba-KEY.npz`` beside
    the term file, under the same key), or None when the cache is off."""
    folder = cache_dir()
    return None if folder is None else folder / f"jieba-{cache_key()}.npz"


_JIEBA_ARRAYS = {"idf_hashes": np.uint64, "idf": np.float64, "name_hashes": np.uint64}


def load_jieba() -> JiebaTables | None:
    """The :class:`tokenize.JiebaTables` kept in the cache folder, or None
    (none kept, the cache off, or a file that cannot be read: it is
    rewritten)."""
    from .tokenize import JiebaTables

    file = jieba_path()
    if file is None or not file.is_file():
        return None
    try:
        with np.load(file, allow_pickle=False) as data:
            arrays = {name: data[name] for name in (*_JIEBA_ARRAYS, "median_idf")}
        for name, dtype in _JIEBA_ARRAYS.items():
            value = arrays[name]
            if value.dtype != dtype or value.ndim != 1 or len(value) == 0:
                raise ValueError(f"{name}: not a 1-d {np.dtype(dtype).name} array")
        if len(arrays["idf"]) != len(arrays["idf_hashes"]):
            raise ValueError("arrays of different lengths")
        return JiebaTables(
            arrays["idf_hashes"],
            arrays["idf"],
            float(arrays["median_idf"]),
            arrays["name_hashes"],
        )
    except Exception as exc:  # noqa: BLE001 - a cache: a bad file is only ignored
        _log.warning("jieba tables %s not read (%s); they are rewritten", file, exc)
        return None


def save_jieba(tables: JiebaTables) -> Path | None:
    """Keep ``tables`` in the cache folder (replacing the file at once, so a
    reader never sees half of one; the files of other keys are removed); the
    file, or None when the cache is off or it could not be written (logged:
    it only costs the next process the read)."""
    file = jieba_path()
    if file is None:
        return None
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".jieba-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(
                    fh,
                    idf_hashes=tables.idf_hashes,
                    idf=tables.idf,
                    median_idf=np.float64(tables.median_idf),
                    name_hashes=tables.name_hashes,
                )
            os.replace(tmp, file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        for stale in file.parent.glob("jieba-*.npz"):
            if stale != file:
                with contextlib.suppress(OSError):
                    stale.unlink()
    except Exception:  # noqa: BLE001 - a cache: losing it is not an error
        _log.warning("jieba tables not written to %s", file, exc_info=True)
        return None
    return file


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the last writer wins
        yield
        return
    with open(folder / "terms.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def merge(entries: Entries, limit: int, read: tuple[int, int, int] | None = None) -> Path | None:
    """Add ``entries``' terms that the file lacks to it (at most ``limit``
    terms in all: beyond that the file keeps what it has); the file written,
    or None when the cache is off or nothing was written. ``read``: the
    file's :func:`stamp` when ``entries`` began as its contents; while it is
    unchanged, ``entries`` replace it without a second read."""
    file = path()
    if file is None:
        return None
    terms, idf, hashes, names = entries
    folder = file.parent
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        now = stamp()
        old = None if now is None or (read is not None and now == read) else load()
        if old is not None:
            known = set(old[0])
            new = [k for k, t in enumerate(terms) if t not in known]
            room = max(limit - len(old[0]), 0)
            new = new[:room]
            if not new:
                return None
            terms = old[0] + [terms[k] for k in new]
            idf = np.concatenate([old[1], idf[new]])
            hashes = np.concatenate([old[2], hashes[new]])
            names = np.concatenate([old[3], names[new]])
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".terms-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(
                    fh,
                    terms=np.frombuffer(orjson.dumps(terms), dtype=np.uint8),
                    idf=idf,
                    hashes=hashes,
                    names=names,
                )
            os.replace(tmp, file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        for stale in folder.glob("terms-*.npz"):
            if stale != file:
                with contextlib.suppress(OSError):
                    stale.unlink()
    return file
