"""From a document's text to the values the SQL checks compare."""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import rjieba

from . import minhash as mh
from . import simhash as sh
from .facts import fact_keys, named_facts
from .normalize import NORMALIZATION_VERSION, Normalized, NormalizeOptions, normalize
from .tokenize import TERMS

#: Clauses shorter than this (characters, spaces removed) are not fingerprinted:
#: short ones ("记者 张三", "据新华社报道") recur across unrelated articles.
MIN_CLAUSE_CHARS = 16
# Clauses end at sentence and clause punctuation (after NFKC: ,:;!? are ASCII),
# not at line ends: they are cut from the key, where lines are joined, so a copy
# that glues its paragraphs together yields the same clauses as one that does not.
_CLAUSE_END = re.compile(r"(?<=[。!?;,:])")
# Spaces are removed with str.split(), which cuts at the whitespace \s matches
# (a regex sub cost four times as much).
_CLAUSE_PUNCT = frozenset("。!?;,:")
# _CLAUSE_END.split as str.replace + str.split: a mark after each punctuation
# character, then a split at the marks (a third of the cost). The mark is a
# character normalization removes (a control character); a text that holds it
# anyway is cut with the regex.
_MARK = "\x00"
_MARKED = tuple((p, p + _MARK) for p in "。!?;,:")


def _cut(text: str, lines: bool = False) -> list[str]:
    """``_CLAUSE_END.split(text)``, also cut at line ends (dropping them) when
    ``lines``, leaving out empty pieces."""
    if _MARK in text:
        pieces = [
            p for line in (text.split("\n") if lines else [text]) for p in _CLAUSE_END.split(line)
        ]
        return [p for p in pieces if p]
    for punct, marked in _MARKED:
        if punct in text:
            text = text.replace(punct, marked)
    if lines:
        text = text.replace("\n", _MARK)
    return text.split(_MARK)


#: Opening clauses sent for the lead rule (a stored text of up to LEAD_CLAUSES - 2
#: clauses can be found as the lead of a longer one).
LEAD_CLAUSES = 10


def clause_hashes(key: str, text: str | None = None) -> tuple[int, ...]:
    """Distinct clause hashes (first 8 bytes of SHA-1, signed) of a normalized key.

    Clauses rather than sentences: a copy that glues a source line onto the
    first sentence ("来源:科技日报据路透社报道,...") or re-punctuates one loses
    one clause, not a whole sentence. On the recrawled Sina pairs, clause
    containment found 286 of 289 copies where sentence containment found 266.

    With ``text`` (the normalized text, lines kept), clauses are also cut at
    line starts: a copy whose unpunctuated title line runs into the first
    sentence in the key still shares that sentence's first clause. Only
    punctuated pieces count there: an unpunctuated line is a title, a nav bar
    or a link list, and site templates repeat those on every page.
    """
    hashes = _hashed(_key_clauses(key), {})
    if text is not None:
        _hashed(_line_clauses(text), hashes)
    return tuple(sorted(set(hashes.values())))


def lead_clause_hashes(text: str, n: int = LEAD_CLAUSES) -> tuple[int, ...]:
    """Hashes of the first ``n`` distinct clauses of a normalized text, in order,
    cut at lines and clause punctuation: the lead rule asks whether a short
    stored text is exactly the opening of a longer one."""
    lines = _line_clauses(text)
    return _lead(lines, _hashed(lines, {}), n)


def clause_and_lead_hashes(
    key: str, text: str, n: int = LEAD_CLAUSES
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``clause_hashes(key, text)`` and ``lead_clause_hashes(text, n)``, with
    the text's clauses cut and each distinct clause hashed once (and the key
    cut only when it differs from the text without spaces: a text of one line
    and its key give the same pieces)."""
    flat = _without_spaces(text)
    pieces = _cut(flat, lines=True)
    lines = _punctuated(pieces)
    hashes = _hashed(lines, {})
    lead = _lead(lines, hashes, n)
    flat_key = "".join(key.split())
    _hashed(_long(pieces if flat_key == flat else _cut(flat_key)), hashes)
    return tuple(sorted(set(hashes.values()))), lead


def _without_spaces(text: str) -> str:
    """``text`` without whitespace but its line ends."""
    return "\n".join("".join(line.split()) for line in text.split("\n"))


def _long(pieces: list[str]) -> list[str]:
    return [p for p in pieces if len(p) >= MIN_CLAUSE_CHARS]


def _punctuated(pieces: list[str]) -> list[str]:
    return [p for p in pieces if len(p) >= MIN_CLAUSE_CHARS and p[-1] in _CLAUSE_PUNCT]


def _key_clauses(key: str) -> list[str]:
    """The key's clauses, spaces removed, long enough to hash. (Spaces are
    removed before the cut: the cut falls after punctuation, never in a space,
    so the pieces are the same.)"""
    return _long(_cut("".join(key.split())))


def _line_clauses(text: str) -> list[str]:
    """Pieces of each line that end at clause punctuation, spaces removed,
    long enough to hash."""
    return _punctuated(_cut(_without_spaces(text), lines=True))


_SHA1_HEAD = struct.Struct(">q").unpack_from  # first 8 bytes, big-endian, signed


def _hashed(clauses: list[str], hashes: dict[str, int]) -> dict[str, int]:
    """Add the hash of each clause not yet in ``hashes`` (clause -> hash)."""
    sha1 = hashlib.sha1
    for clause in clauses:
        if clause not in hashes:
            hashes[clause] = _SHA1_HEAD(sha1(clause.encode("utf-8")).digest())[0]
    return hashes


def _lead(clauses: list[str], hashes: dict[str, int], n: int) -> tuple[int, ...]:
    """The first ``n`` distinct hashes of ``clauses``, in order."""
    lead: dict[int, None] = {}
    for clause in clauses:
        lead.setdefault(hashes[clause])
        if len(lead) == n:
            break
    return tuple(lead)


@dataclass(frozen=True)
class Fingerprint:
    digest: bytes  # SHA-1 of the normalized title + body key: the exact layer
    title_digest: bytes | None  # SHA-1 of the normalized title alone, for analysts
    simhash: int  # unsigned 64-bit SimHash over title + body terms
    length: int  # characters in the key: the SimHash distance depends on it
    clauses: tuple[int, ...]  # signed 64-bit hashes of the body's distinct clauses
    lead: tuple[int, ...]  # the body's first clauses, in order
    minhash: tuple[int, ...] | None  # MinHash signature over 5-grams of the key (None: too short)
    facts: tuple[str, ...]  # numbers, names, titles: what verifies a near-duplicate match

    @property
    def bands(self) -> list[int]:
        return sh.bands(self.simhash)

    def wire(self) -> dict[str, Any]:
        """The stored fingerprint as the SQL functions read it from JSON
        (dedup_ingest's items, dedup_refingerprint's): hex digests, the SimHash
        as a signed 64-bit integer (a bigint), lists, the normalization version.
        Ingest and the rebuild both send this (as ``sql_item()``), so they
        cannot drift apart."""
        return {
            "sha1": self.digest.hex(),
            "title_sha1": self.title_digest.hex() if self.title_digest else None,
            "simhash": sh.to_signed(self.simhash),
            "length": self.length,
            "clauses": list(self.clauses),
            "minhash": list(self.minhash) if self.minhash is not None else None,
            "facts": fact_keys(self.facts),
            "norm_version": NORMALIZATION_VERSION,
        }

    def sql_item(self, array_literals: bool = True) -> dict[str, Any]:
        """``wire()`` and the lead as the fields of a ``dedup_item`` sent to the
        server (dedup_ingest's items, dedup_refingerprint's), the integer arrays
        as PostgreSQL array literals (``"{1,-2,3}"``) unless ``array_literals``
        is false: ``jsonb_populate_record`` reads a literal with the array
        type's input function, where a JSON array of numbers is parsed into
        numerics and converted one by one. The peers stream's items cost the
        server 66 us a document to read instead of 130 (BENCHMARKS.md, revision
        0029). A schema before that revision reads JSON arrays only
        (``database.reads_array_literals``).

        ``signature`` is the MinHash signature again as
        ``document_minhash_bands.signature`` stores it (revision 0040; on
        ``documents`` before 0041): its 16-bit values one after the other, in
        the hex form of PostgreSQL's bit strings (``"x0a1f..."``); a schema
        before that revision ignores it."""
        item = self.wire()
        item["lead"] = list(self.lead)
        item["signature"] = signature_bits(self.minhash)
        if array_literals:
            for name in ARRAY_FIELDS:
                item[name] = pg_array(item[name])
        return item


#: The integer arrays of an item (``Fingerprint.sql_item``).
ARRAY_FIELDS = ("clauses", "minhash", "facts", "lead")


def signature_bits(minhash: Sequence[int] | None) -> str | None:
    """A MinHash signature (16-bit values) as the input of a PostgreSQL bit
    string: ``"x"`` and four hex digits a value, big-endian (what SQL's
    ``dedup_minhash_bits`` makes of the values), or None."""
    if minhash is None:
        return None
    return "x" + np.asarray(minhash, dtype=">i2").tobytes().hex()


def pg_array(values: Sequence[int] | None) -> str | None:
    """A PostgreSQL array literal of integers (``"{1,-2,3}"``), or None:
    orjson's JSON array with braces for brackets (3 us for 40 signed 64-bit
    integers, where ``",".join(map(str, ...))`` took 14)."""
    return None if values is None else "{" + orjson.dumps(values).decode()[1:-1] + "}"


def with_json_arrays(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` (a ``sql_item()`` row) with its array literals as lists again,
    for a schema that reads JSON arrays only."""
    out = dict(item)
    for name in ARRAY_FIELDS:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = orjson.loads("[" + value[1:-1] + "]")
    return out


def _normalized(
    body: str, title: str | None, options: NormalizeOptions
) -> tuple[Normalized, Normalized | None, str]:
    """The normalized body and title, and the key the exact layer hashes."""
    norm_body = normalize(body, options)
    norm_title = None
    if title and title.strip():
        try:
            norm_title = normalize(title, options)
        except ValueError:
            norm_title = None  # a title made only of noise is no title
    key = norm_body.key if norm_title is None else f"{norm_title.key}\n{norm_body.key}"
    return norm_body, norm_title, key


def content_digest(body: str, title: str | None, options: NormalizeOptions) -> bytes:
    """The exact layer's SHA-1 alone (``Deduper.seen``): no tokens, no signatures."""
    return hashlib.sha1(_normalized(body, title, options)[2].encode("utf-8")).digest()


def fingerprint(body: str, title: str | None, options: NormalizeOptions) -> Fingerprint:
    """Fingerprint a document. The title counts: a same title over a different
    body is a different document, and a new title over the same body only moves
    the SimHash a little."""
    norm_body, norm_title, key = _normalized(body, title, options)
    text = norm_body.text if norm_title is None else f"{norm_title.text}\n{norm_body.text}"
    # One segmentation for both SimHash and the facts: the term table keeps
    # each term's name flag, so rjieba.cut does (rjieba.tag costs twice as much)
    hashes, weights, names = TERMS.lookup(rjieba.cut(text), text)
    clauses, lead = clause_and_lead_hashes(norm_body.key, norm_body.text)
    return Fingerprint(
        digest=hashlib.sha1(key.encode("utf-8")).digest(),
        title_digest=(
            hashlib.sha1(norm_title.key.encode("utf-8")).digest() if norm_title else None
        ),
        simhash=sh.simhash_arrays(hashes, weights),
        length=len(key),
        clauses=clauses,
        lead=lead,
        minhash=None if (sig := mh.signature(key)) is None else tuple(sig),
        facts=tuple(named_facts(text, names)),
    )
