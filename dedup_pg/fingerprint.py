"""From a document's text to the values the SQL checks compare."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from . import simhash as sh
from .normalize import NormalizeOptions, normalize
from .tokenize import TERMS

#: Clauses shorter than this (characters, spaces removed) are not fingerprinted:
#: short ones ("记者 张三", "据新华社报道") recur across unrelated articles.
MIN_CLAUSE_CHARS = 16
# Clauses end at sentence and clause punctuation (after NFKC: ,:;!? are ASCII),
# not at line ends: they are cut from the key, where lines are joined, so a copy
# that glues its paragraphs together yields the same clauses as one that does not.
_CLAUSE_END = re.compile(r"(?<=[。!?;,:])")
_SPACE = re.compile(r"\s+")


def clause_hashes(key: str) -> tuple[int, ...]:
    """Distinct clause hashes (first 8 bytes of SHA-1, signed) of a normalized key.

    Clauses rather than sentences: a copy that glues a source line onto the
    first sentence ("来源:科技日报据路透社报道,...") or re-punctuates one loses
    one clause, not a whole sentence. On the recrawled Sina pairs, clause
    containment found 286 of 289 copies where sentence containment found 266.
    """
    seen: set[int] = set()
    for clause in _CLAUSE_END.split(key):
        clause = _SPACE.sub("", clause)
        if len(clause) >= MIN_CLAUSE_CHARS:
            seen.add(
                int.from_bytes(
                    hashlib.sha1(clause.encode("utf-8")).digest()[:8], "big", signed=True
                )
            )
    return tuple(sorted(seen))


@dataclass(frozen=True)
class Fingerprint:
    digest: bytes  # SHA-1 of the normalized title + body key: the exact layer
    title_digest: bytes | None  # SHA-1 of the normalized title alone, for analysts
    simhash: int  # unsigned 64-bit SimHash over title + body terms
    length: int  # characters in the key: the SimHash distance depends on it
    clauses: tuple[int, ...]  # signed 64-bit hashes of the body's distinct clauses

    @property
    def bands(self) -> list[int]:
        return sh.bands(self.simhash)


def fingerprint(body: str, title: str | None, options: NormalizeOptions) -> Fingerprint:
    """Fingerprint a document. The title counts: a same title over a different
    body is a different document, and a new title over the same body only moves
    the SimHash a little."""
    norm_body = normalize(body, options)
    norm_title = None
    if title and title.strip():
        try:
            norm_title = normalize(title, options)
        except ValueError:
            norm_title = None  # a title made only of noise is no title
    key = norm_body.key if norm_title is None else f"{norm_title.key}\n{norm_body.key}"
    text = norm_body.text if norm_title is None else f"{norm_title.text}\n{norm_body.text}"
    return Fingerprint(
        digest=hashlib.sha1(key.encode("utf-8")).digest(),
        title_digest=(
            hashlib.sha1(norm_title.key.encode("utf-8")).digest() if norm_title else None
        ),
        simhash=sh.simhash_arrays(*TERMS.weights(text)),
        length=len(key),
        clauses=clause_hashes(norm_body.key),
    )
