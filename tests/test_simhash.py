import hashlib
import random

import numpy as np
import psycopg
from simhash import Simhash

from dedup_pg import fingerprint as fp
from dedup_pg import simhash as sh
from dedup_pg.fingerprint import clause_hashes, fingerprint
from dedup_pg.normalize import NormalizeOptions
from dedup_pg.tokenize import TERMS, tokens, weighted_terms


def _md5_64(data: bytes) -> int:
    return int.from_bytes(hashlib.md5(data).digest()[-8:], "big")


def test_numpy_simhash_equals_the_simhash_package(sina):
    for article in sina[:60]:
        weights = weighted_terms(article["body"])
        expected = Simhash(weights, f=64, hashfunc=_md5_64).value
        assert sh.simhash(weights) == expected
        assert sh.simhash_arrays(*TERMS.weights(article["body"])) == expected


def test_simhash_votes_are_exact_whatever_the_order_of_terms(dxy):
    # A tie (the weights with a bit set equal those without) leaves the bit
    # clear, and no bit depends on the order in which the matrix product adds
    # the votes: that order is the CPU's BLAS kernel's, and before the exact
    # re-sum the same text got SimHashes 3-5 bits apart on two machines (336
    # of dxy_covid_short's items; the short ones whose unknown terms all
    # weigh the median IDF). Here the order changes by shuffling the terms.
    w = 11.7
    tie = np.array([0b01, 0b10], dtype=np.uint64)
    assert sh.simhash_arrays(tie, np.array([w, w])) == 0  # bits 0 and 1 tie
    assert sh.simhash_arrays(tie, np.array([w, w * (1 + 2**-52)])) == 0b10
    rng = random.Random(7)
    orders = 0
    for item in dxy[:600]:
        hashes, weights = TERMS.weights(f"{item['title']}\n{item['body']}")
        exact = sh.simhash_arrays(hashes, weights)
        for _ in range(3):
            perm = np.array(rng.sample(range(len(hashes)), len(hashes)), dtype=np.intp)
            assert sh.simhash_arrays(hashes[perm], weights[perm]) == exact, item["id"]
            orders += 1
    assert orders > 1000


def test_compiled_votes_are_numpys_up_to_rounding(sina, dxy):
    # the compiled loop adds each bit's votes in the terms' order, the matrix
    # product in BLAS's: the sums agree within the rounding bound that
    # simhash_arrays re-sums exactly inside, and the bits are the same
    from dedup_pg._terms_jit import kernels

    texts = [a["body"] for a in sina[:200]] + [f"{i['title']}\n{i['body']}" for i in dxy[:200]]
    for text in texts:
        hashes, weights = TERMS.weights(text)
        compiled = kernels().simhash_votes(hashes, weights)
        reference = sh.simhash_votes_numpy(hashes, weights)
        bound = 2.0 * len(weights) * 2.0**-53 * float(weights.sum())
        assert np.all(np.abs(compiled - reference) <= bound), text[:40]
    assert kernels().simhash_votes(np.empty(0, np.uint64), np.empty(0)).tolist() == [0.0] * 64


def test_tokens_drop_punctuation_and_stop_tokens():
    toks = tokens("北京时间11月5日，中国女排在世锦赛上3比0战胜了对手！")
    assert "，" not in toks and "！" not in toks and "的" not in toks and "了" not in toks
    assert {"中国女排", "世锦赛", "11", "战胜"} <= set(toks)


def test_bands_cover_the_fingerprint():
    value = random.Random(1).getrandbits(64)
    bands = sh.bands(value)
    assert len(bands) == 4 and all(0 <= b < 65536 for b in bands)
    assert sum(b << (16 * i) for i, b in enumerate(bands)) == value
    assert sh.to_signed(value) & ((1 << 64) - 1) == value


def test_band_probe_guarantee(dsn):
    """Every fingerprint within distance d shares a band value within radius
    d // 4 (pigeonhole); the SQL neighbour function produces that set."""
    rng = random.Random(7)
    with psycopg.connect(dsn) as conn:
        for _ in range(300):
            a = rng.getrandbits(64)
            d = rng.randint(0, 7)
            b = a
            for bit in rng.sample(range(64), d):
                b ^= 1 << bit
            assert sh.hamming(a, b) == d
            radius = d // 4
            found = False
            for band_a, band_b in zip(sh.bands(a), sh.bands(b), strict=True):
                probe = conn.execute(
                    "SELECT dedup_band_neighbours(%s, %s)", [band_a, radius]
                ).fetchone()[0]
                assert len(probe) == (1 if radius == 0 else 17)
                found = found or band_b in probe
            assert found, (a, b, d)


def test_title_counts_and_title_digest_is_separate():
    opts = NormalizeOptions()
    body = "今天上午,市政府召开新闻发布会,介绍今年前三季度经济运行情况。"
    plain = fingerprint(body, None, opts)
    titled = fingerprint(body, "前三季度经济运行平稳", opts)
    assert plain.digest != titled.digest
    assert plain.title_digest is None and titled.title_digest is not None
    other_body = fingerprint(
        "完全不同的正文,讲的是另一件事情,和经济没有关系。", "前三季度经济运行平稳", opts
    )
    assert other_body.title_digest == titled.title_digest
    assert other_body.digest != titled.digest


def test_clause_hashes_ignore_short_clauses_and_paragraphing():
    a = clause_hashes(
        "据报道,这是一个足够长的分句用于测试指纹,短句,另一个同样足够长的分句也要参与计算。"
    )
    assert len(a) == 2
    glued = fingerprint(
        "第一段里有一句足够长的话需要被记住。第二段也有一句足够长的话需要被记住。",
        None,
        NormalizeOptions(),
    )
    split = fingerprint(
        "第一段里有一句足够长的话需要被记住。\n\n第二段也有一句足够长的话需要被记住。",
        None,
        NormalizeOptions(),
    )
    assert glued.clauses == split.clauses and len(glued.clauses) == 2


def test_clause_cuts_equal_the_regex_cuts():
    # the clauses as first cut (regexes), against the str.replace/split version
    import re

    end = re.compile(r"(?<=[。!?;,:])")

    def key_clauses(key):
        return [p for p in end.split(re.sub(r"\s+", "", key)) if len(p) >= fp.MIN_CLAUSE_CHARS]

    def line_clauses(text):
        return [
            p
            for line in re.sub(r"[^\S\n]+", "", text).split("\n")
            for p in end.split(line)
            if len(p) >= fp.MIN_CLAUSE_CHARS and p[-1] in "。!?;,:"
        ]

    rng = random.Random(20)
    alphabet = "中文字词句" * 4 + "。!?;,:" + " \n\t\u3000\x00" + "ab"
    for _ in range(3000):
        text = "".join(rng.choices(alphabet, k=rng.randrange(0, 120)))
        key = text if rng.random() < 0.5 else " ".join(text.split())
        assert fp._key_clauses(key) == key_clauses(key), repr(key)
        assert fp._line_clauses(text) == line_clauses(text), repr(text)
        lines, hashes = line_clauses(text), {}
        for clause in lines + key_clauses(key):
            hashes.setdefault(
                clause,
                int.from_bytes(hashlib.sha1(clause.encode()).digest()[:8], "big", signed=True),
            )
        lead = tuple(dict.fromkeys(hashes[c] for c in lines))[: fp.LEAD_CLAUSES]
        assert fp.clause_and_lead_hashes(key, text) == (tuple(sorted(set(hashes.values()))), lead)
