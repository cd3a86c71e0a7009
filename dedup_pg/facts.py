"""The facts of a text: what two different stories on one template differ in.

Two match reports from one live-report template, two admissions brochures of
one school, two casting items for one film share most of their wording; they
differ in numbers (scores, codes, dates, amounts), names (players, actors,
companies) and titles of works. A rewrite or a repost keeps those. So a
near-duplicate match is verified on the pair's facts (in SQL:
``dedup_facts_verdict`` in sql/schema/40_hash_layers.sql, which ingest,
rebuild and the review page ask): when *each* text holds
facts the other lacks (a share of its own facts, ``facts_disagreement_share``)
the match goes to review instead of duplicate; so it does when the incoming
text adds many facts (``facts_added_share``: a commentary that appends a
speech is not a copy of the speech). Small one-sided differences are what
copies do: an added ad paragraph brings a few new facts, a deleted paragraph
takes some away.

Facts are numbers of two or more characters and jieba's person, place,
organisation and other proper-noun tokens of two or more characters, taken
from the normalized text (title included). Latin words are left out: in
Chinese news they are mostly bylines and site names ("作者:Suky【TechWeb】"),
which a recrawled copy gains or loses; on the labelled Sina pairs numbers and
names alone flagged more of the template pairs (40 of 53 at share 0.15) than
with Latin words and titles added (34), for 8 of 332 same-story pairs either
way (bench/results/semantic.md).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable

import rjieba

#: jieba part-of-speech tags of proper nouns: person (nr, nrfg, nrt), place
#: (ns), organisation (nt), other proper nouns (nz).
NAME_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz"})
#: Bump when what counts as a fact changes: stored facts are then stale
#: (``dedup-pg rebuild --refingerprint`` rewrites them).
FACTS_VERSION = 2
#: A huge document keeps its first MAX_FACTS facts (in text order).
MAX_FACTS = 400
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def facts(text: str) -> list[str]:
    """Distinct facts of a normalized text, in order of first appearance."""
    return tagged_facts(text, rjieba.tag(text))


def is_name(word: str, tag: str) -> bool:
    """Is ``word``, tagged ``tag`` by jieba, a name fact? A function of the word
    alone: rjieba's tag is its cut with each word's tag looked up (the
    dictionary's, else a guess from the word's characters), so the term table
    keeps it per term (``tokenize.TermTable.lookup``)."""
    return tag in NAME_TAGS and len(word) >= 2 and not word.isascii()


def tagged_facts(text: str, tags: list[tuple[str, str]]) -> list[str]:
    """:func:`facts` given the text's ``rjieba.tag`` (when the caller has it)."""
    return named_facts(text, [word for word, tag in tags if is_name(word, tag)])


def named_facts(text: str, names: list[str]) -> list[str]:
    """:func:`facts` given the text's name facts (:func:`is_name`), in text order."""
    found: dict[str, None] = {}
    for number in _NUMBER.findall(text):  # no groups: findall gives the matches
        if "." not in number:
            number = number.lstrip("0") or "0"
        if len(number) >= 2:
            found.setdefault(number)
    found.update(dict.fromkeys(names))
    return list(found)[:MAX_FACTS]


@functools.lru_cache(maxsize=1 << 16)
def fact_key(fact: str) -> int:
    """A fact as SQL stores and compares it (``documents.facts``): the first 4
    bytes of its UTF-8 SHA-256, a signed 32-bit integer. The rules only ask
    which facts two texts share; revision 0027 computed the stored ones' keys
    the same way in SQL (``sha256``, PostgreSQL 11+). Cached: names and
    numbers repeat from text to text."""
    return int.from_bytes(hashlib.sha256(fact.encode("utf-8")).digest()[:4], "big", signed=True)


def fact_keys(facts: Iterable[str]) -> list[int]:
    """:func:`fact_key` of each fact, in order."""
    return [fact_key(f) for f in facts]
