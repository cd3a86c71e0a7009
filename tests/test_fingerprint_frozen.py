"""Fingerprints of real articles must not change by accident.

``tests/fingerprints_frozen.txt`` holds digests of what the fingerprint
modules return for ~17k real documents: every sina2018 article, the recrawl
pairs' raw and clean copies, the THUCNews, SogouCA and DXY samples, and
variants of 300 sina2018 articles made messy on purpose (HTML, CRLF line ends,
full-width indents, invisible characters, a scraped script line, banners), also
under non-default options. A value in a digest is whatever a stored document or
a verdict depends on: the wire fingerprint (exact and title SHA-1, SimHash,
length, clauses, MinHash, facts, normalization version), the lead clauses, and
the normalized text and key (the semantic layer embeds the text).

A speed-up must leave every digest as it is. A change meant to move
fingerprints bumps the version it concerns and regenerates the file:
``python tests/test_fingerprint_frozen.py --write`` (say why in the commit).
The file was first written with the code at 251ead1, before issue 20's speed
work. On a mismatch, ``--dump FILE`` writes one digest per document, to diff
against a dump made at the commit before.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dedup_pg.facts import facts
from dedup_pg.fingerprint import clause_hashes, fingerprint, lead_clause_hashes
from dedup_pg.normalize import NormalizationError, NormalizeOptions, normalize
from dedup_pg.simhash import simhash
from dedup_pg.tokenize import tokens, weighted_terms

EXPECTED = Path(__file__).with_name("fingerprints_frozen.txt")
SHARED_DATA = Path(
    os.environ.get(
        "DEDUP_PG_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
)
BLOCK = 64  # documents per digest line

PLAIN = NormalizeOptions(noise_patterns=())
LOWER = NormalizeOptions(lowercase=True)


def _read(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _messy(article: dict, rng: random.Random) -> dict:
    """A deterministic messy copy: what crawlers send besides clean text."""
    paragraphs = [p for p in article["body"].split("\n") if p.strip()] or [article["body"]]
    kind = rng.randrange(5)
    if kind == 0:  # HTML with entities, a script and a comment
        body = (
            '<div class="art"><script>var ad = "<p>x</p>";</script><!-- ad -->'
            + "".join(f"<p>{p.replace(' ', '&nbsp;')}</p>" for p in paragraphs)
            + "<br/>&copy; 2018&#65292;新浪</div>"
        )
    elif kind == 1:  # CRLF, full-width indents, trailing spaces
        body = "\r\n\r\n".join(f"\u3000\u3000{p}  \t" for p in paragraphs)
    elif kind == 2:  # invisible characters, control characters, U+FFFD
        chars = list(article["body"])
        for _ in range(max(1, len(chars) // 50)):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice("\u200b\ufeff\x07\ufffd\xa0"))
        body = "".join(chars)
    elif kind == 3:  # scraped script lines and an object literal
        body = (
            "(function(){ var s = document.createElement('script');\n"
            + "\n".join(paragraphs)
            + "\ntitle: '精彩回顾',  //标题\nid: 5,\n}, {\n.tech-con p{margin-bottom:30px}"
        )
    else:  # banners the default noise patterns remove, full-width letters
        body = (
            "【快讯】"
            + "\n".join(paragraphs)
            + "\n责任编辑：张三\n本文来源：新浪科技\nＡＢＣ１２３ 版权所有，未经授权不得转载"
        )
    return {"body": body, "title": article["title"]}


def documents(data: Path) -> Iterator[tuple[str, NormalizeOptions, dict]]:
    """(group, options, {"body", "title"}) in a fixed order."""
    default = NormalizeOptions()
    sina = _read(data / "news" / "sina2018.jsonl")
    for a in sina:
        yield "sina2018", default, a
    for p in _read(data / "pairs" / "sina2018_recrawl.jsonl"):
        yield "recrawl", default, {"body": p["a"], "title": p.get("title")}
        yield "recrawl", default, {"body": p["b"], "title": None}
    for name in ("thucnews_cnews", "sogouca", "dxy_covid_short"):
        for a in _read(data / "news" / f"{name}.jsonl"):
            yield name, default, a
    rng = random.Random(20)
    for a in sina[:300]:
        yield "messy", default, _messy(a, rng)
    for a in sina[300:500]:
        yield "plain options", PLAIN, a
    for a in sina[500:700]:
        yield "lowercase", LOWER, a


def _norm(raw: str | None, options: NormalizeOptions) -> list[str] | None:
    if raw is None:
        return None
    try:
        n = normalize(raw, options)
    except NormalizationError:
        return None
    return [n.text, n.key]


def record(doc: dict, options: NormalizeOptions, extra: bool) -> str:
    """Everything stored or compared for one document, as canonical JSON.
    ``extra``: also the public helpers fingerprint() does not call."""
    body, title = doc["body"], doc.get("title")
    try:
        fp = fingerprint(body, title, options)
    except NormalizationError as exc:
        return json.dumps({"error": str(exc)})
    out = {
        "wire": fp.wire(),
        "lead": list(fp.lead),
        "bands": fp.bands,
        "body": _norm(body, options),
        "title": _norm(title, options),
    }
    if extra:
        text, key = out["body"]
        out["tokens"] = tokens(text)
        out["simhash_terms"] = simhash(weighted_terms(text))
        out["facts"] = facts(text)
        out["clauses_key"] = list(clause_hashes(key))
        out["clauses_key_text"] = list(clause_hashes(key, text))
        out["lead_text"] = list(lead_clause_hashes(text))
    return json.dumps(out, ensure_ascii=False, sort_keys=True)


def digests(data: Path) -> Iterator[tuple[str, str]]:
    """(group, sha256 of the record) per document."""
    for i, (group, options, doc) in enumerate(documents(data)):
        yield group, hashlib.sha256(record(doc, options, i % 10 == 0).encode("utf-8")).hexdigest()


def blocks(data: Path) -> list[str]:
    """One line per BLOCK documents: first index, group, count, digest of their digests."""
    lines = []
    rows = list(digests(data))
    for start in range(0, len(rows), BLOCK):
        chunk = rows[start : start + BLOCK]
        h = hashlib.sha256("".join(d for _, d in chunk).encode()).hexdigest()[:32]
        lines.append(f"{start}\t{chunk[0][0]}\t{len(chunk)}\t{h}")
    return lines


@pytest.mark.slow
def test_fingerprints_of_real_documents_are_unchanged(shared_data: Path):
    expected = EXPECTED.read_text(encoding="utf-8").splitlines()
    got = blocks(shared_data)
    assert len(got) == len(expected)
    changed = [line for line, old in zip(got, expected, strict=True) if line != old]
    assert changed == [], f"{len(changed)} of {len(got)} blocks changed, first: {changed[:3]}"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {EXPECTED.name}")
    ap.add_argument("--dump", type=Path, help="write one digest per document to this file")
    ap.add_argument("--data", type=Path, default=SHARED_DATA)
    args = ap.parse_args()
    if args.dump:
        with args.dump.open("w") as fh:
            for i, (group, d) in enumerate(digests(args.data)):
                fh.write(f"{i}\t{group}\t{d}\n")
    if args.write:
        EXPECTED.write_text("\n".join(blocks(args.data)) + "\n", encoding="utf-8")
    if not (args.write or args.dump):
        sys.exit("nothing to do: --write or --dump FILE")
