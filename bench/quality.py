"""De-duplication quality on real Chinese news (sina2018), end to end.

What it measures, and why
-------------------------
A de-duplication engine fails in two ways: it lets reposts through (low
recall) or it swallows distinct articles (false duplicates, which silently lose
news). This script measures both on REAL articles from ``../shared/data``
(read in place, never copied into the repository), through the public API
(``Deduper.ingest_many``), on a fresh embedded PostgreSQL.

1. originals: a seeded sample of *distinct* sina2018 articles (default 3,000).
   Distinct means: not in any pair of ``pairs/sina2018_ngram_candidates_unlabelled``
   (character 8-gram Jaccard >= 0.5, the corpus's natural same-story pairs),
   body at least 200 characters, and no other article with the same body.
   Every 'duplicate' verdict here is a false duplicate (bar: <= 0.2%);
   'review' is reported separately. Flagged pairs are printed so a reader can
   judge whether they are real same-story pairs the dataset did not label.
2. hard_negatives: 500 further distinct articles wrapped in one identical site
   template (nav header, a "相关推荐" block of 5 headlines, copyright footer).
   The shared boilerplate must not make distinct articles collide.
3. copies: reposts of originals, one seeded sample of 300 originals per type
   (the first 300 stored ones, i.e. not judged duplicates, of a seeded order
   of all originals; each copy made from its own seed, so that two engines
   are compared on the same copies),
   ingested after the originals. A copy is *found* when the verdict is
   'duplicate' and matched_id is its original's id (bar: recall >= 0.95 per
   type; deleted_fifth is informative only). Types: exact, normalization
   (full-width, indents, CRLF, blank lines, &nbsp;, <p>, zero-width spaces),
   banner (copyright / "更多精彩资讯请关注XX网" lines), ad_paragraph (one ad
   paragraph inserted mid-text), new_title (same body, reworded title),
   shuffled (sentence order shuffled), deleted_fifth (a fifth of sentences cut;
   a body with a single sentence is cut or shuffled by clauses instead),
   lead_rewrite (an own-words lead over a copied body: the first two sentences
   replaced by a connective such as "据了解，" and one of the first three
   sentences of another stored original, the rest copied; issue 21).
4. recrawl: ``pairs/sina2018_recrawl.jsonl`` in a SEPARATE fresh database
   (its clean copies are sina2018 articles, so sharing the database with parts
   1-3 would make them duplicates of the originals): every clean 'a' (with the
   pair's title) first, then every raw 'b' (title line, full-width indents and
   ad JavaScript inside the body, no title); each 'b' must match its 'a'.
5. probe (--probe, default 200): in a third fresh database, ONE short page
   (a one-line photo caption) in the same site template, then 200 more
   distinct template pages. Every one should be 'new'; this shows whether a
   short page lets the template's own clauses decide containment.

For missed copies the script recomputes, in Python with the engine's own
fingerprinting, the SimHash distance and the containment (share of the smaller
text's sentence/clause hashes found in the other) between the copy
and its original, so a miss can be attributed to a layer's threshold.

Run from the repository root:  python bench/quality.py [--originals N] [--copies N] [--seed S]
Writes the report to bench/results/quality.md and prints it; exits 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from common import (
    DATA,
    ROOT,
    Report,
    add_settings_option,
    allow_backfill,
    engine_revision,
    read_jsonl,
    scratch_dir,
    settings_of,
)

from dedup_pg import Deduper
from dedup_pg.fingerprint import Fingerprint, fingerprint

out = Report()

RESULTS = ROOT / "bench" / "results" / "quality.md"
COPY_TYPES = (
    "exact",
    "normalization",
    "banner",
    "ad_paragraph",
    "new_title",
    "shuffled",
    "deleted_fifth",
    "lead_rewrite",
)
INFORMATIVE = {"deleted_fifth"}
RECALL_BAR = 0.95
FALSE_DUP_BAR = 0.002
BASE_TIME = datetime(2018, 11, 20, 0, 0, 0, tzinfo=timezone.utc)

# --------------------------------------------------------------------------- report


# --------------------------------------------------------------------------- data


def distinct_pool(articles: list[dict]) -> tuple[list[dict], dict[str, int]]:
    """Articles that have no known near-duplicate in the corpus."""
    pairs = read_jsonl(DATA / "pairs" / "sina2018_ngram_candidates_unlabelled.jsonl")
    in_pairs = {p["a_id"] for p in pairs} | {p["b_id"] for p in pairs}
    by_body = collections.Counter(a["body"].strip() for a in articles)
    why = collections.Counter()
    pool = []
    for a in articles:
        if a["id"] in in_pairs:
            why["in an 8-gram candidate pair"] += 1
        elif len(a["body"].strip()) < 200:
            why["body < 200 chars"] += 1
        elif by_body[a["body"].strip()] > 1:
            why["body identical to another article"] += 1
        else:
            pool.append(a)
    pool.sort(key=lambda a: a["id"])
    return pool, dict(why)


_SENT = re.compile(r"(?<=[。！？])|\n")


def sentences(body: str) -> list[str]:
    """Sentence units (ending in 。！？ or a line end), stripped, non-empty."""
    return [s.strip() for s in _SENT.split(body) if s and s.strip()]


def sentences_or_clauses(body: str) -> list[str]:
    """Sentences; for a one-sentence body, its clauses (so it can be cut or reordered)."""
    units = sentences(body)
    if len(units) < 2:
        units = [u.strip() for u in re.split(r"(?<=[。！？，；])|\n", body) if u and u.strip()]
    return units


def join_sentences(units: list[str], like: str) -> str:
    return ("\n" if "\n" in like.strip() else "").join(units)


# --------------------------------------------------------------------------- copy makers

SITES = [
    "中华网",
    "凤凰网",
    "环球网",
    "东方网",
    "光明网",
    "北青网",
    "华商网",
    "大众网",
    "千龙网",
    "红网",
    "南海网",
    "中国网",
    "腾讯新闻",
    "搜狐科技",
    "网易新闻",
    "今日头条",
]

BANNERS = [
    "（本文版权归{site}所有，未经授权不得转载）",
    "声明：本文由{site}整理发布，转载请注明出处，如有侵权请联系删除。",
    "{site}版权所有，未经许可禁止转载。",
    "本文来源：{site}",
    "【{site}】原创稿件，转载请务必注明来源及作者。",
]
MORE_LINES = [
    "更多精彩资讯请关注{site}",
    "更多精彩资讯，请关注{site}官方微信公众号。",
    "更多精彩内容敬请关注{site}新闻频道",
]

ADS = [
    "【广告】双十一限时特惠！某品牌旗舰智能手机全场直降500元，12期免息分期，下单再送价值299元无线蓝牙耳机，名额有限，先到先得。",
    "本地装修找我们：全包套餐每平米仅需599元起，十年质保，免费上门量房设计，前50名预约客户再送全屋智能家居大礼包，咨询热线400-800-1234。",
    "推荐阅读：想在三个月内英语口语脱胎换骨？外教一对一在线课程现在免费试听，扫码领取价值199元的新人学习礼包。",
    "零基础学Python编程，30天带你入门数据分析，名师直播授课，学不会全额退款，现在报名立减300元。",
    "【推广】年化收益率最高可达4.5%的稳健理财产品限时发售，1000元起投，随存随取，新用户首笔投资再享加息券。",
    "夏季清仓大甩卖！品牌运动鞋服低至三折，满299元包邮，会员再享九五折，活动仅限本周，点击进入官方旗舰店抢购。",
    "关注我们的微信公众号，每天推送最新科技资讯和数码评测，回复“福利”即可领取限量会员兑换码。",
    "【招商】全国加盟火热进行中，小本投资三万元即可开店，总部提供选址、装修、培训一条龙服务，当月回本不是梦，详询客服热线。",
    "驾校暑期特惠班火热报名中，学车费用全包价3999元，包接送、包考试、不过免费重学，学生凭学生证再减200元。",
    "体检套餐限时五折：三甲医院专家团队，全身深度体检只需398元，含肿瘤筛查与心脑血管检查，预约即送早餐券。",
]

TEMPLATE_SUFFIX = "@tpl"
# The one site template for hard negatives (identical for every page).
TEMPLATE_HEAD = [
    "首页 | 新闻 | 财经 | 科技 | 体育 | 娱乐 | 教育 | 健康",
    "您当前的位置：首页 > 新闻中心 > 正文",
]
TEMPLATE_RELATED = [
    "相关推荐",
    "教育部发布通知部署今年秋季学期开学工作",
    "国产新能源汽车销量连续三个月同比增长超过百分之五十",
    "专家解读：冬季流感高发期如何做好家庭防护",
    "全国多地出台政策支持高校毕业生就业创业",
    "国足公布新一期集训名单 多名年轻球员首次入选",
]
TEMPLATE_FOOT = [
    "关于我们 | 联系我们 | 广告服务 | 网站地图 | 版权声明",
    "Copyright © 2005-2018 华夏资讯网 版权所有 京ICP备05012345号",
    "联系电话：010-65432100 违法和不良信息举报邮箱：jubao@huaxiazixun.example.com",
]


# A one-line photo caption, as on gallery pages (for the probe, part 5).
SHORT_PAGE_BODY = "图为11月4日晚拍摄的国家会展中心（上海）夜景，灯光璀璨。"


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in text)


def paragraphs(body: str, rng: random.Random) -> list[str]:
    """Existing lines, or (glued bodies) runs of 2-4 sentences."""
    lines = [line.strip() for line in body.split("\n") if line.strip()]
    if len(lines) > 1:
        return lines
    units = sentences(body)
    paras, i = [], 0
    while i < len(units):
        k = rng.randint(2, 4)
        paras.append("".join(units[i : i + k]))
        i += k
    return paras


def insert_zero_width(text: str, rng: random.Random, count: int) -> str:
    chars = list(text)
    for _ in range(count):
        chars.insert(rng.randrange(len(chars) + 1), "\u200b")
    return "".join(chars)


def make_normalization(a: dict, rng: random.Random) -> tuple[str, str]:
    paras = []
    for p in paragraphs(a["body"], rng):
        p = fullwidth(p)
        units = [u for u in re.split(r"(?<=[。！？])", p) if u]
        if len(units) > 1 and rng.random() < 0.5:  # a stray &nbsp; between two sentences
            j = rng.randrange(1, len(units))
            units.insert(j, "&nbsp;")
        p = "\u3000\u3000" + "".join(units)
        if rng.random() < 0.3:
            p = "&nbsp;&nbsp;" + p
        paras.append(f"<p>{p}</p>")
    body = "\r\n\r\n\r\n".join(paras)  # CRLF, doubled blank lines
    body = insert_zero_width(body, rng, rng.randint(3, 8))
    return fullwidth(a["title"]), body


def make_banner(a: dict, rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    lines = [rng.choice(BANNERS).format(site=site), rng.choice(MORE_LINES).format(site=site)]
    if rng.random() < 0.7:
        body = a["body"].rstrip() + "\n" + "\n".join(lines)
    else:
        body = "\n".join(lines) + "\n" + a["body"].lstrip()
    return a["title"], body


def make_ad_paragraph(a: dict, rng: random.Random) -> tuple[str, str]:
    ad = rng.choice(ADS)
    lines = [line for line in a["body"].split("\n") if line.strip()]
    if len(lines) >= 3:  # real paragraphs: insert between two middle ones
        j = rng.randint(len(lines) // 3, max(len(lines) // 3, 2 * len(lines) // 3))
        j = min(max(j, 1), len(lines) - 1)
        return a["title"], "\n".join(lines[:j] + [ad] + lines[j:])
    units = sentences(a["body"])  # glued paragraphs: insert between two sentences
    if len(units) < 2:
        return a["title"], a["body"] + "\n" + ad
    lo, hi = max(1, len(units) // 3), max(1, 2 * len(units) // 3)
    j = rng.randint(lo, hi)
    return a["title"], "".join(units[:j]) + "\n" + ad + "\n" + "".join(units[j:])


_TITLE_PARTS = re.compile(r"[\s：:，,！!？?|—\-]+")


def make_new_title(a: dict, rng: random.Random) -> tuple[str, str]:
    title = a["title"].strip()
    parts = [p for p in _TITLE_PARTS.split(title) if p]
    clauses = [c for c in re.split(r"[，。！？：；,!?;:\n]", a["body"]) if len(c.strip()) >= 8]
    new = None
    if len(parts) >= 2 and (rng.random() < 0.5 or not clauses):
        if len(parts) >= 3 and rng.random() < 0.5:
            parts = parts[:]
            parts.pop(rng.randrange(len(parts)))  # cut one part
        rotated = parts[1:] + parts[:1]  # reorder
        new = rng.choice(["：", "，", " "]).join(rotated)
    if (new is None or new == title) and clauses:
        new = clauses[0].strip()[:28]  # the body's first clause as headline
    if new is None or new == title:
        new = title[len(title) // 2 :] + "，" + title[: len(title) // 2]
    return new, a["body"]


def make_shuffled(a: dict, rng: random.Random) -> tuple[str, str]:
    units = sentences_or_clauses(a["body"])
    shuffled = units[:]
    for _ in range(10):
        rng.shuffle(shuffled)
        if shuffled != units or len(units) < 2:
            break
    return a["title"], join_sentences(shuffled, a["body"])


def make_deleted_fifth(a: dict, rng: random.Random) -> tuple[str, str]:
    units = sentences_or_clauses(a["body"])
    drop = (
        set(rng.sample(range(len(units)), max(1, round(len(units) / 5))))
        if len(units) > 1
        else set()
    )
    return a["title"], join_sentences([u for i, u in enumerate(units) if i not in drop], a["body"])


CONNECTIVES = ["据了解，", "据悉，", "记者了解到，", "值得一提的是，", "此外，", "另据报道，"]


def make_lead_rewrite(a: dict, rng: random.Random, donor: dict) -> tuple[str, str]:
    """An own-words lead over a copied body: the first two sentences replaced by
    one sentence of another article (``donor``) after a connective ("据了解，"),
    the rest copied as it is. The new lead brings the donor's names and figures."""
    units = sentences_or_clauses(a["body"])
    donor_units = [u for u in sentences(donor["body"]) if len(u) >= 15] or sentences(donor["body"])
    lead = rng.choice(CONNECTIVES) + rng.choice(donor_units[:3])
    cut = 2 if len(units) > 2 else 1
    return a["title"], join_sentences([lead, *units[cut:]], a["body"])


MAKERS = {
    "exact": lambda a, rng: (a["title"], a["body"]),
    "normalization": make_normalization,
    "banner": make_banner,
    "ad_paragraph": make_ad_paragraph,
    "new_title": make_new_title,
    "shuffled": make_shuffled,
    "deleted_fifth": make_deleted_fifth,
}


def study_edits(
    articles: list[dict],
    copies: int,
    seed: int,
    distinct: bool = False,
    keep: Callable[[dict], bool] | None = None,
) -> list[tuple[str, dict, dict]]:
    """(edit type, original, its copy) for the recall studies (bench/candidate_recall.py,
    bench/clause_sampling.py): ``copies`` seeded originals of the distinct pool, each
    with an ad paragraph, a new title, shuffled paragraphs, a fifth deleted and a lead
    rewritten from another original; with ``distinct``, also that other original
    itself ("distinct": a pair that should stay apart). An original ``keep`` refuses
    gets no copies (nor draws from the seeded generator)."""
    pool, _ = distinct_pool(articles)
    rng = random.Random(seed)
    originals = rng.sample(pool, copies * 2)
    makers = {
        "ad_paragraph": make_ad_paragraph,
        "new_title": make_new_title,
        "shuffled": make_shuffled,
        "deleted_fifth": make_deleted_fifth,
    }
    out = []
    for i, a in enumerate(originals[:copies]):
        if keep is not None and not keep(a):
            continue
        for name, make in makers.items():
            title, body = make(a, rng)
            out.append((name, a, {"title": title, "body": body}))
        donor = originals[copies + i]
        title, body = make_lead_rewrite(a, rng, donor)
        out.append(("lead_rewrite", a, {"title": title, "body": body}))
        if distinct:
            out.append(("distinct", a, donor))
    return out


def wrap_in_template(a: dict) -> str:
    return "\n".join(TEMPLATE_HEAD + [a["body"].strip()] + TEMPLATE_RELATED + TEMPLATE_FOOT)


# --------------------------------------------------------------------------- running


class Clock:
    """Monotonic seen_at values inside one UTC day (the 7-day window covers all)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return (BASE_TIME + timedelta(seconds=self.n)).isoformat()


def run_group(dd: Deduper, items: list[dict], workers: int) -> tuple[list, float]:
    started = time.perf_counter()
    verdicts = list(dd.ingest_many(items, workers=workers))
    return verdicts, time.perf_counter() - started


class Row:
    def __init__(
        self,
        group: str,
        items: list[dict],
        verdicts: list,
        seconds: float,
        expect: dict[str, str] | None,
        bar: str,
    ) -> None:
        self.group, self.items, self.verdicts, self.seconds = group, items, verdicts, seconds
        self.expect = expect  # copy id -> the id it must match (None: distinct articles)
        self.bar = bar

    @property
    def n(self) -> int:
        return len(self.verdicts)

    def count(self, kind: str) -> int:
        return sum(v.verdict == kind for v in self.verdicts)

    def found(self) -> int:
        assert self.expect is not None
        return sum(
            v.verdict == "duplicate" and v.matched_id == self.expect[v.id] for v in self.verdicts
        )

    def layers(self, kind: str, names: Iterable[str]) -> str:
        c = collections.Counter(v.layer for v in self.verdicts if v.verdict == kind)
        return "/".join(str(c.get(name, 0)) for name in names)

    def passed(self) -> str:
        if self.bar == "recall":
            return "PASS" if self.found() / self.n >= RECALL_BAR else "FAIL"
        if self.bar == "false_dup":
            return "PASS" if self.count("duplicate") / self.n <= FALSE_DUP_BAR else "FAIL"
        return "(info)"

    def cells(self) -> list[str]:
        n = self.n
        pct = lambda k: f"{k / n:.2%}" if n else "-"  # noqa: E731
        return [
            self.group,
            str(n),
            pct(self.found()) if self.expect is not None else "-",
            pct(self.count("duplicate")),
            pct(self.count("review")),
            pct(self.count("new")),
            str(self.count("error")),
            self.layers("duplicate", ("exact", "simhash", "containment")),
            self.layers("review", ("simhash", "containment")),
            f"{self.seconds:.1f}",
            f"{n / self.seconds:.0f}" if self.seconds else "-",
            self.passed(),
        ]


HEADER = [
    "group / type",
    "n",
    "found",
    "duplicate",
    "review",
    "new",
    "errors",
    "dup layers e/s/c",
    "review layers s/c",
    "seconds",
    "docs/s",
    "bar",
]


def table(rows: list[Row]) -> list[str]:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return lines


# --------------------------------------------------------------------------- diagnostics


def char_ngrams(text: str, n: int = 8) -> set[str]:
    text = re.sub(r"\s+", "", text)
    return {text[i : i + n] for i in range(max(0, len(text) - n + 1))}


def jaccard(a: str, b: str) -> float:
    x, y = char_ngrams(a), char_ngrams(b)
    return len(x & y) / len(x | y) if x | y else 0.0


_UNIT_NAME = (
    "clauses" if "clauses" in getattr(Fingerprint, "__dataclass_fields__", {}) else "sentences"
)


def _units(fp: Fingerprint) -> tuple[int, ...]:
    """The hashes the containment layer compares (clauses, or sentences in older engines)."""
    return getattr(fp, _UNIT_NAME)


def pair_diagnostics(dd: Deduper, a: dict, b: dict) -> str:
    """SimHash distance and sentence containment as the engine computes them."""
    fa = fingerprint(a["body"], a.get("title"), dd.options)
    fb = fingerprint(b["body"], b.get("title"), dd.options)
    dist = bin(fa.simhash ^ fb.simhash).count("1")
    ua, ub = set(_units(fa)), set(_units(fb))
    shared = len(ua & ub)
    smaller = max(1, min(len(ua), len(ub)))
    return (
        f"simhash distance {dist} (lengths {fa.length}/{fb.length}), {_UNIT_NAME} "
        f"{len(ua)}/{len(ub)} shared {shared} (containment {shared / smaller:.2f}), "
        f"char-8gram Jaccard {jaccard(a['body'], b['body']):.2f}"
    )


def short(text: str | None, n: int = 60) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= n else text[:n] + "…"


def show_flagged(dd: Deduper, row: Row, by_id: dict[str, dict], limit: int) -> None:
    flagged = [v for v in row.verdicts if v.verdict in ("duplicate", "review")]
    flagged.sort(key=lambda v: (v.verdict != "duplicate", -(v.score or 0)))
    out(f"\n### Flagged in `{row.group}`: {len(flagged)} (showing up to {limit})\n")
    if not flagged:
        out("none")
        return
    if any(v.id.endswith(TEMPLATE_SUFFIX) for v in flagged):
        kinds = collections.Counter(
            (
                v.verdict,
                v.layer,
                "another template page"
                if (v.matched_id or "").endswith(TEMPLATE_SUFFIX)
                else "an original",
            )
            for v in flagged
        )
        out(
            "By what they matched: "
            + "; ".join(
                f"{verdict} via {layer} of {what}: {n}"
                for (verdict, layer, what), n in kinds.most_common()
            )
            + "."
        )
        out()
    for v in flagged[:limit]:
        a, b = by_id[v.id], by_id.get(v.matched_id or "")
        out(
            f"- **{v.verdict}** via {v.layer}, score {v.score:.3f}"
            + (f", distance {v.distance}" if v.distance is not None else "")
            + f": `{v.id}` 「{short(a.get('title'))}」 vs `{v.matched_id}` 「{short(b.get('title') if b else None)}」"
        )
        if b:
            out(f"  - {pair_diagnostics(dd, a, b)}")
            out(f"  - A: {short(a['body'], 110)}")
            out(f"  - B: {short(b['body'], 110)}")


def show_missed(dd: Deduper, row: Row, by_id: dict[str, dict], limit: int) -> None:
    assert row.expect is not None
    missed = [
        v
        for v in row.verdicts
        if not (v.verdict == "duplicate" and v.matched_id == row.expect[v.id])
    ]
    if not missed:
        return
    kinds = collections.Counter(
        v.verdict if v.verdict != "duplicate" else "duplicate of another doc" for v in missed
    )
    out(
        f"\n### Missed in `{row.group}`: {len(missed)} ({', '.join(f'{k} {c}' for k, c in kinds.items())}); "
        f"showing up to {limit}\n"
    )
    for v in missed[:limit]:
        copy, orig = by_id[v.id], by_id[row.expect[v.id]]
        detail = f"verdict {v.verdict}"
        if v.layer:
            detail += f" via {v.layer}, score {v.score:.3f}"
            detail += f", distance {v.distance}" if v.distance is not None else ""
            detail += f", matched `{v.matched_id}`"
        if v.error:
            detail += f", error {v.error}"
        out(f"- `{v.id}` ({detail}); original 「{short(orig.get('title'))}」")
        out(f"  - vs its original: {pair_diagnostics(dd, orig, copy)}")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--originals", type=int, default=3000, help="distinct originals (default 3000)")
    ap.add_argument(
        "--hard-negatives", type=int, default=500, help="template-wrapped distinct articles"
    )
    ap.add_argument(
        "--probe",
        type=int,
        default=200,
        help="template pages ingested after one short template page (0: skip)",
    )
    ap.add_argument("--copies", type=int, default=300, help="copies per type (default 300)")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--workers", type=int, default=2, help="fingerprinting processes")
    ap.add_argument("--examples", type=int, default=10, help="flagged/missed examples to print")
    ap.add_argument("--output", type=Path, default=RESULTS)
    add_settings_option(ap, "facts_template_max_chars=null")
    args = ap.parse_args(argv)
    changed = settings_of(args.set)
    t0 = time.perf_counter()

    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    pool, excluded = distinct_pool(articles)
    rng = random.Random(args.seed)
    need = args.originals + args.hard_negatives + args.probe
    if need > len(pool):
        ap.error(f"only {len(pool)} distinct articles, asked for {need}")
    chosen = rng.sample(pool, need)
    originals = chosen[: args.originals]
    negatives = chosen[args.originals : args.originals + args.hard_negatives]
    probe = chosen[args.originals + args.hard_negatives :]

    out("# dedup-pg quality on real Chinese news (sina2018)")
    out()
    out(
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, `python bench/quality.py "
        f"--originals {args.originals} --copies {args.copies} --seed {args.seed}` "
        f"(hard negatives {args.hard_negatives}, workers {args.workers})"
        + "".join(f" --set {x}" for x in args.set)
        + f", engine at commit {engine_revision()}."
    )
    out(
        f"Data: {DATA} (read in place). sina2018 has {len(articles):,} articles; "
        f"{len(pool):,} are distinct (excluded: "
        + ", ".join(f"{why} {n}" for why, n in excluded.items())
        + ")."
    )
    out(
        "Bars: recall (found = duplicate verdict matching the original) >= 95% per copy type; "
        "false-duplicate rate <= 0.2% on distinct articles. deleted_fifth is informative."
    )

    by_id: dict[str, dict] = {}
    clock = Clock()
    rows: list[Row] = []
    home = scratch_dir("dedup-quality-")
    dd = Deduper(home=home / "main")
    allow_backfill(dd)
    for k, v in changed.items():
        dd.set_setting(k, v)
    settings = dd.conn.execute("SELECT name, value FROM dedup_settings ORDER BY name").fetchall()

    # 1. distinct originals
    items = []
    for a in originals:
        item = {
            "id": a["id"],
            "title": a["title"],
            "body": a["body"],
            "source": "sina",
            "url": f"https://news.sina.com.cn/{a['id']}.shtml",
            "seen_at": clock(),
        }
        items.append(item)
        by_id[a["id"]] = item
    verdicts, secs = run_group(dd, items, args.workers)
    rows.append(Row("originals (distinct)", items, verdicts, secs, None, "false_dup"))

    # 2. hard negatives: distinct articles in one shared site template
    items = []
    for a in negatives:
        item = {
            "id": a["id"] + TEMPLATE_SUFFIX,
            "title": a["title"],
            "body": wrap_in_template(a),
            "source": "huaxia",
            "url": f"https://www.huaxiazixun.example.com/{a['id']}.html",
            "seen_at": clock(),
        }
        items.append(item)
        by_id[item["id"]] = item
    verdicts, secs = run_group(dd, items, args.workers)
    rows.append(Row("hard negatives (shared template)", items, verdicts, secs, None, "false_dup"))

    # 3. copies, each type on its own seeded sample of originals. Only
    # stored originals are sampled: one judged a (false) duplicate is not
    # stored, so no copy could match its id; that error is counted above.
    # The sample is the first --copies stored ones of a seeded order of all
    # originals, and each copy is made from its own seed: an engine that
    # stores one more or one fewer original shifts the sample by at most
    # one, so two engines are compared on the same copies.
    stored = {
        a["id"]
        for a, v in zip(originals, rows[0].verdicts, strict=True)
        if v.verdict != "duplicate"
    }
    for k, kind in enumerate(COPY_TYPES):
        order = random.Random(f"{args.seed}:{kind}").sample(originals, len(originals))
        sample = [a for a in order if a["id"] in stored][: args.copies]
        items, expect = [], {}
        for i, a in enumerate(sample):
            trng = random.Random(f"{args.seed}:{kind}:{a['id']}")
            if kind == "lead_rewrite":  # the new lead is another original's
                donor = order[trng.randrange(len(order))]
                while donor["id"] == a["id"]:
                    donor = order[trng.randrange(len(order))]
                title, body = make_lead_rewrite(by_id[a["id"]], trng, donor)
            else:
                title, body = MAKERS[kind](by_id[a["id"]], trng)
            item = {
                "id": f"{a['id']}~{kind}",
                "title": title,
                "body": body,
                "source": f"repost-{k}",
                "url": f"https://repost{k}.example.com/{kind}/{i}.html",
                "seen_at": clock(),
            }
            items.append(item)
            by_id[item["id"]] = item
            expect[item["id"]] = a["id"]
        verdicts, secs = run_group(dd, items, args.workers)
        rows.append(
            Row(
                f"copy: {kind}",
                items,
                verdicts,
                secs,
                expect,
                "info" if kind in INFORMATIVE else "recall",
            )
        )
    main_rows = len(rows)

    # 4. recrawl pairs, in a separate fresh database
    pairs = read_jsonl(DATA / "pairs" / "sina2018_recrawl.jsonl")
    dd2 = Deduper(home=home / "recrawl")
    allow_backfill(dd2)
    for k, v in changed.items():
        dd2.set_setting(k, v)
    rclock = Clock()
    a_items = [
        {
            "id": f"recrawl-{i}-a",
            "title": p.get("title"),
            "body": p["a"],
            "source": "sina-clean",
            "seen_at": rclock(),
        }
        for i, p in enumerate(pairs)
    ]
    b_items = [
        {
            "id": f"recrawl-{i}-b",
            "title": None,
            "body": p["b"],
            "source": "sina-raw",
            "seen_at": rclock(),
        }
        for i, p in enumerate(pairs)
    ]
    for item in a_items + b_items:
        by_id[item["id"]] = item
    a_verdicts, secs = run_group(dd2, a_items, args.workers)
    # a clean copy that was itself a duplicate is not stored: its raw copy
    # then correctly matches the stored document the clean copy matched
    kept_as = {v.id: (v.matched_id if v.verdict == "duplicate" else v.id) for v in a_verdicts}
    rows.append(Row("recrawl: clean a", a_items, a_verdicts, secs, None, "info"))
    b_verdicts, secs = run_group(dd2, b_items, args.workers)
    expect = {f"recrawl-{i}-b": kept_as[f"recrawl-{i}-a"] for i in range(len(pairs))}
    rows.append(Row("recrawl: raw b → a", b_items, b_verdicts, secs, expect, "recall"))

    # 5. probe: one short page in the site template, then distinct template
    # pages, in a third fresh database. Shared template clauses are the same
    # share of a short page as of any page, so they can carry the
    # containment check of every later page on their own.
    if probe:
        dd3 = Deduper(home=home / "probe")
        allow_backfill(dd3)
        for k, v in changed.items():
            dd3.set_setting(k, v)
        pclock = Clock()
        short_page = {
            "id": "short-gallery-page" + TEMPLATE_SUFFIX,
            "title": "图集：进博会场馆夜景",
            "body": wrap_in_template({"body": SHORT_PAGE_BODY}),
            "seen_at": pclock(),
        }
        by_id[short_page["id"]] = short_page
        list(dd3.ingest_many([short_page]))
        items = []
        for a in probe:
            item = {
                "id": a["id"] + TEMPLATE_SUFFIX + "2",
                "title": a["title"],
                "body": wrap_in_template(a),
                "seen_at": pclock(),
            }
            items.append(item)
            by_id[item["id"]] = item
        verdicts, secs = run_group(dd3, items, args.workers)
        rows.append(
            Row(
                "probe: template pages after one short page",
                items,
                verdicts,
                secs,
                None,
                "false_dup",
            )
        )
        dd3.close()

    out()
    out("## Results")
    out()
    out(
        "found: share of copies with verdict duplicate AND matched_id = its original. "
        "Layer columns count verdicts by the layer that decided them (e = exact, s = simhash, "
        "c = containment). seconds include starting the fingerprinting worker processes."
    )
    out(
        "Parts 1-3 share one fresh database (originals first, then hard negatives, then copies "
        "type by type); part 4 (recrawl) uses a second fresh database, part 5 (probe: one short "
        "page in the site template, then distinct template pages) a third."
    )
    out()
    for line in table(rows):
        out(line)
    copies_total = sum(r.n for r in rows[2:main_rows])
    out()
    out(
        f"Totals: {sum(r.n for r in rows):,} documents in {sum(r.seconds for r in rows):.1f} s of "
        f"ingest; copies {copies_total:,}."
    )
    dup_a = [v for v in a_verdicts if v.verdict != "new"]
    if dup_a:
        out(
            "Recrawl clean copies not 'new' (another clean copy in the file is the same text or "
            "the same story): "
            + "; ".join(
                f"`{v.id}` {v.verdict} via {v.layer} of `{v.matched_id}`" for v in dup_a[:5]
            )
        )

    out()
    out("## Settings in force")
    out()
    out("| name | value |")
    out("|---|---|")
    for name, value in settings:
        out(f"| {name} | `{json.dumps(value, ensure_ascii=False)}` |")

    out()
    out("## Flagged distinct articles")
    show_flagged(dd, rows[0], by_id, args.examples)
    show_flagged(dd, rows[1], by_id, min(args.examples, 5))
    if probe:
        show_flagged(dd, rows[-1], by_id, 3)

    out()
    out("## Missed copies")
    any_missed = False
    for row in rows:
        if row.expect is not None and row.found() < row.n:
            any_missed = True
            show_missed(
                dd if not row.group.startswith("recrawl") else dd2,
                row,
                by_id,
                min(args.examples, 5),
            )
    if not any_missed:
        out("\nnone")

    failed = [r.group for r in rows if r.passed() == "FAIL"]
    out()
    out("## Verdict")
    out()
    out("All bars met." if not failed else "Below the bar: " + ", ".join(failed) + ".")
    for row in rows:
        if row.expect is None and row.bar == "false_dup" and row.count("new") < row.n:
            out(
                f"- `{row.group}`: {row.n - row.count('new')} of {row.n} distinct articles were not "
                f"'new' ({row.count('duplicate')} duplicate, {row.count('review')} review); "
                "review is outside the bar but each one is queued for a person."
            )
    out(f"\nTotal run time {time.perf_counter() - t0:.0f} s.")
    dd.close()
    dd2.close()
    out.write(args.output)
    print(f"\nwrote {args.output}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
