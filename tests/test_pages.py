"""Raw pages in: decoding (wrong charsets, mojibake, garbage), main-content
extraction, WARC and folder input, learned template lines, script folding.

The pages are real sina2018 articles in the site templates of
bench/html_pages.py (navigation, sidebars, related headlines, ads, footers).
"""

from __future__ import annotations

import io
import json
import os
import random
import sys
from collections import Counter

import opencc
import psycopg
import pytest
from click.testing import CliRunner

from dedup_pg import Deduper, pages, templates
from dedup_pg.cli import main
from dedup_pg.documents import InputError
from dedup_pg.normalize import clean

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import html_pages  # noqa: E402  (bench/html_pages.py: the page generator)


def char_f1(got: str, want: str) -> float:
    g = Counter(c for c in got if not c.isspace())
    w = Counter(c for c in want if not c.isspace())
    hit = sum((g & w).values())
    return 0.0 if not hit else 2 * hit / (sum(g.values()) + sum(w.values()))


@pytest.fixture(scope="module")
def site_pages(sina):
    """Articles with a title and 300-2,000 characters, each rendered in all
    four site templates: [(article, paragraphs, {site: bytes})]."""
    rng = random.Random(5)
    articles = [
        a
        for a in sina
        if a.get("title") and 300 <= len(a["body"]) <= 2000 and "\n" not in a["body"]
    ]
    sites = html_pages.make_sites([a["title"] for a in articles[-240:]], rng)
    out = []
    for i, a in enumerate(articles[:40]):
        paras = html_pages.paragraphs(a["body"], rng)
        out.append((a, paras, {s.name: html_pages.render(s, a["title"], paras, i) for s in sites}))
    return out


# -- decoding -----------------------------------------------------------------


def test_wrongly_declared_gbk_and_gb18030_pages_decode_exactly(site_pages):
    for _, _, by_site in site_pages[:10]:
        # oldtable: GBK bytes declaring utf-8; mobile: GB18030 bytes declaring big5
        assert pages.declared_charset(by_site["oldtable"]) == "utf-8"
        assert pages.decode_bytes(by_site["oldtable"]) == by_site["oldtable"].decode("gbk")
        assert pages.declared_charset(by_site["mobile"]) == "big5"
        assert pages.decode_bytes(by_site["mobile"]) == by_site["mobile"].decode("gb18030")


def test_big5_page_decodes(sina):
    text = opencc.OpenCC("s2t").convert(sina[3]["body"][:800])
    page = f'<html><head><meta charset="gbk"><title>測試</title></head><body><p>{text}</p></body></html>'
    data = page.encode("big5", errors="ignore")
    assert pages.decode_bytes(data) == data.decode("big5")


def test_mojibake_is_repaired_and_garbage_rejected(sina):
    text = sina[0]["body"][:200]
    import ftfy.bad_codecs  # noqa: F401  (registers sloppy-windows-1252)

    # a UTF-8 page once read as Windows-1252 and saved again as UTF-8
    garbled = text.encode("utf-8").decode("sloppy-windows-1252")
    assert garbled != text
    assert pages.decode_bytes(garbled.encode("utf-8")) == text
    with pytest.raises(InputError, match="cannot decode"):
        pages.decode_bytes(os.urandom(4000))
    with pytest.raises(InputError, match="empty"):
        pages.decode_bytes(b"  \n")


def test_a_missing_extra_is_named():
    with pytest.raises(InputError, match=r"pg-text-dedup\[html\]"):
        pages._need("dedup_pg_no_such_module")


# -- extraction ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(pages.EXTRACTORS))
def test_each_extractor_finds_the_article(site_pages, name):
    scores = []
    for _a, paras, by_site in site_pages[:6]:
        for site, data in by_site.items():
            result = pages.page_text(data, extractor=name)
            scores.append((site, char_f1(result.text, "".join(paras))))
    mean = sum(s for _, s in scores) / len(scores)
    # the template alone is a third of a page: without extraction F1 is ~0.78
    assert mean > 0.9, sorted(scores, key=lambda x: x[1])[:5]


def test_default_extractor_on_every_template(site_pages):
    assert pages.DEFAULT_EXTRACTOR == "gne"
    for a, paras, by_site in site_pages[:10]:
        for site, data in by_site.items():
            result = pages.page_text(data)
            assert char_f1(result.text, "".join(paras)) > 0.97, (site, a["id"])
            assert "相关推荐" not in result.text and "版权所有" not in result.text


def test_titles_lose_the_site_name():
    assert pages._main_title("北京今冬首场雪_portal新闻") == "北京今冬首场雪"
    assert pages._main_title("oldtable网--北京今冬首场雪") == "北京今冬首场雪"
    assert pages._main_title("北京今冬首场雪 - 某某网 | 新闻") == "北京今冬首场雪"
    with pytest.raises(ValueError, match="unknown HTML extractor"):
        pages.get_extractor("nope")


# -- ingest -------------------------------------------------------------------


def test_html_items_across_templates(dd, site_pages):
    """Reposts in another site's template are duplicates; different articles
    in one template are not; the stored body is the article text."""
    originals = [
        {"id": f"o{i}", "html": by_site[sorted(by_site)[i % 4]], "source": sorted(by_site)[i % 4]}
        for i, (_, _, by_site) in enumerate(site_pages[:24])
    ]
    verdicts = list(dd.ingest_many(originals))
    assert [v.verdict for v in verdicts] == ["new"] * 24, [(v.id, v.error) for v in verdicts]
    copies = [
        {"id": f"c{i}", "html": by_site[sorted(by_site)[(i + 1) % 4]]}
        for i, (_, _, by_site) in enumerate(site_pages[:24])
    ]
    found = [(v.verdict, v.matched_id) for v in dd.ingest_many(copies)]
    assert found == [("duplicate", f"o{i}") for i in range(24)]
    title, body = dd.conn.execute(
        "SELECT title, body FROM documents WHERE external_id = 'o1'"
    ).fetchone()
    assert title == site_pages[1][0]["title"]
    assert body == "\n".join(site_pages[1][1])


def test_undecodable_page_in_a_batch_is_reported_and_kept(dd, site_pages):
    items = [
        {"id": "good", "html": site_pages[0][2]["oldtable"]},
        {"id": "binary", "html": os.urandom(3000)},
        {"id": "nothing", "html": "<html><body><script>var a=1;</script></body></html>"},
        {"id": "neither"},
    ]
    v = list(dd.ingest_many(items))
    assert v[0].verdict == "new"
    assert v[1].verdict == "error" and "cannot decode" in v[1].error
    assert v[2].verdict == "error" and "no main text" in v[2].error
    assert v[3].verdict == "error" and "missing field: body (or html)" in v[3].error
    kept = dd.conn.execute(
        "SELECT external_id, length(payload) FROM ingest_errors ORDER BY external_id"
    ).fetchall()
    assert [k[0] for k in kept] == ["binary", "neither", "nothing"] and kept[0][1] > 3000


def test_cli_ingests_a_folder_and_a_warc(dsn, site_pages, tmp_path):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    folder = tmp_path / "pages"
    for i, (a, _, by_site) in enumerate(site_pages[:6]):
        site = ["portal", "oldtable"][i % 2]
        (folder / site).mkdir(parents=True, exist_ok=True)
        (folder / site / f"{a['id']}.html").write_bytes(by_site[site])
    (folder / "notes.txt").write_text("not a page")
    runner = CliRunner()
    out = tmp_path / "verdicts.jsonl"
    result = runner.invoke(main, ["ingest", str(folder), "--dsn", dsn, "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["verdict"] for x in lines] == ["new"] * 6
    assert lines[0]["id"].startswith(("oldtable/", "portal/"))

    warc = tmp_path / "crawl.warc.gz"
    with warc.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for i, (a, _, by_site) in enumerate(site_pages[:6]):
            site = "html5" if i < 5 else "mobile"
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"
            )
            writer.write_record(
                writer.create_warc_record(
                    f"https://{site}.example.cn/a/{a['id']}.html",
                    "response",
                    payload=io.BytesIO(by_site[site]),
                    http_headers=headers,
                )
            )
    out = tmp_path / "warc-verdicts.jsonl"
    result = runner.invoke(main, ["ingest", str(warc), "--dsn", dsn, "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    # the same six articles, from other sites' templates: all duplicates
    assert [x["verdict"] for x in lines] == ["duplicate"] * 6
    with psycopg.connect(dsn) as conn:
        seen = conn.execute(
            "SELECT source FROM document_sightings WHERE url LIKE 'https://%' ORDER BY source"
        ).fetchall()
    assert {s[0] for s in seen} == {"html5.example.cn", "mobile.example.cn"}


# -- learned template lines ----------------------------------------------------

NAV = "首页 | 新闻 | 体育 | 娱乐 | 财经 | 科技"
FOOTER = "Copyright © 2018 某某网 版权所有 京ICP证000123号"
ADS = ["扫码下载客户端，领取新人红包", "热门手游，登录即送VIP"]


def _templated(body: str, i: int) -> str:
    """A scraped page as plain text: nav line, article, a rotating ad, footer."""
    return f"{NAV}\n热门推荐\n{body}\n{ADS[i % 2]}\n{FOOTER}"


def test_template_lines_are_learned_stripped_and_editable(dd, sina):
    bodies = [a["body"] for a in sina[100:130]]
    verdicts = list(
        dd.ingest_many(
            {"id": f"t{i}", "body": _templated(b, i), "source": "site.cn"}
            for i, b in enumerate(bodies[:20])
        )
    )
    assert all(v.verdict == "new" for v in verdicts)
    learned = templates.learn(dd.conn, min_share=0.3, min_docs=10)
    assert [(r.source, r.documents, r.new_patterns) for r in learned] == [("site.cn", 20, 5)]
    patterns = {templates.line_key(r[7]): r for r in templates.list_patterns(dd.conn, "site.cn")}
    assert set(patterns) == {templates.line_key(x) for x in [NAV, "热门推荐", FOOTER, *ADS]}
    assert all(r[3] and r[6] == 1 for r in patterns.values())  # enabled, learned in version 1
    assert templates.learn(dd.conn) == []  # incremental: nothing new to read

    # From now on the site's pages fingerprint as their article alone: a
    # templated page is an exact duplicate of the bare article, and the stored
    # page keeps its template lines.
    dd.reload_settings()
    assert dd.ingest({"id": "bare", "body": bodies[25], "source": "feed"}).verdict == "new"
    v = dd.ingest({"id": "page", "body": _templated(bodies[25], 1), "source": "site.cn"})
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "exact", "bare")
    v = dd.ingest({"id": "page26", "body": _templated(bodies[26], 0), "source": "site.cn"})
    assert v.verdict == "new"
    stored = dd.conn.execute("SELECT body FROM documents WHERE external_id = 'page26'").fetchone()
    assert stored[0] == _templated(bodies[26], 0)
    # another source has no patterns: its templated page is not exact
    v = dd.check_many([{"body": _templated(bodies[27], 0), "source": "other.cn"}])[0]
    assert v.verdict == "new"
    v = dd.check_many([{"body": bodies[26], "source": "feed"}])[0]
    assert (v.verdict, v.layer, v.matched_id) == ("duplicate", "exact", "page26")

    # Disabling the navigation line bumps the version; the line counts again.
    nav_id = patterns[templates.line_key(NAV)][0]
    assert templates.set_enabled(dd.conn, [nav_id], False) == 1
    version = dd.conn.execute(
        "SELECT version FROM source_template_state WHERE source = 'site.cn'"
    ).fetchone()[0]
    assert version == 2
    dd.reload_settings()
    v = dd.check_many([{"body": _templated(bodies[25], 1), "source": "site.cn"}])[0]
    assert (v.verdict, v.layer) != ("duplicate", "exact")
    with pytest.raises(KeyError, match="no template pattern with id 999999"):
        templates.set_enabled(dd.conn, [999999], True)

    # An analyst adds a block from psql: it is stripped where its lines occur together.
    dd.conn.execute(
        "INSERT INTO source_templates (source, kind, pattern_text) VALUES ('site.cn', 'block', %s)",
        ["相关阅读\n本文作者的更多文章"],
    )
    dd.reload_settings()
    marked = f"{bodies[6]}\n相关阅读\n本文作者的更多文章"
    assert dd.templates.current().strip("site.cn", marked) == clean(bodies[6])

    # The review page reads a text's facts as ingest fingerprints it: a
    # template line's number is the site's, not the article's.
    from dedup_pg.web.review import _facts_of

    dd.conn.execute(
        "INSERT INTO source_templates (source, kind, pattern_text) VALUES ('site.cn', 'line', %s)",
        ["客服热线 4008001234"],
    )
    dd.reload_settings()
    page = f"{bodies[26]}\n客服热线 4008001234"
    assert "4008001234" not in bodies[26]
    assert "4008001234" in _facts_of(page, None, "other.cn", dd.options, dd.templates.current())
    assert "4008001234" not in _facts_of(page, None, "site.cn", dd.options, dd.templates.current())


def test_new_lines_are_judged_on_the_documents_since_they_appeared(dd, sina):
    """A site redesign: the new footer is learned from the pages after it."""
    bodies = [a["body"] for a in sina[200:260]]
    first = [
        {"id": f"a{i}", "body": f"{bodies[i]}\n旧版页脚 版权所有", "source": "s"} for i in range(30)
    ]
    list(dd.ingest_many(first))
    templates.learn(dd.conn, min_share=0.5, min_docs=10)
    second = [
        {"id": f"b{i}", "body": f"{bodies[30 + i]}\n新版页脚 联系我们", "source": "s"}
        for i in range(15)
    ]
    list(dd.ingest_many(second))
    templates.learn(dd.conn, min_share=0.5, min_docs=10)
    texts = {templates.line_key(r[7]): float(r[4]) for r in templates.list_patterns(dd.conn, "s")}
    # the new footer: on a third of the documents overall, but on all since it
    # appeared; the old one's share decays (it stays a pattern until disabled)
    assert texts["新版页脚联系我们"] == 1.0
    assert 0.6 < texts["旧版页脚版权所有"] < 0.7


def test_templates_cli(dsn, sina):
    with Deduper(dsn) as dd:
        list(
            dd.ingest_many(
                {"id": f"t{i}", "body": _templated(a["body"], i), "source": "site.cn"}
                for i, a in enumerate(sina[300:315])
            )
        )
    runner = CliRunner()
    result = runner.invoke(main, ["templates", "learn", "--dsn", dsn, "--min-docs", "5"])
    assert result.exit_code == 0, result.output
    assert "site.cn" in result.output
    result = runner.invoke(main, ["templates", "list", "--dsn", dsn, "--format", "json"])
    rows = json.loads(result.output)
    assert len(rows) == 5 and rows[0]["enabled"] is True
    result = runner.invoke(main, ["templates", "disable", str(rows[0]["id"]), "--dsn", dsn])
    assert result.exit_code == 0 and "1 patterns disabled" in result.output
    result = runner.invoke(main, ["templates", "enable", "424242", "--dsn", dsn])
    assert result.exit_code != 0 and "no template pattern with id 424242" in result.output


# -- script folding ------------------------------------------------------------


def test_traditional_repost_is_caught_only_with_script_folding(dd, sina):
    to_tw = opencc.OpenCC("s2twp")
    originals = sina[400:406]
    reposts = [
        {"id": f"tw{i}", "title": to_tw.convert(a["title"]), "body": to_tw.convert(a["body"])}
        for i, a in enumerate(originals)
    ]
    assert reposts[0]["body"] != originals[0]["body"]
    list(
        dd.ingest_many(
            {"id": f"cn{i}", **{k: a[k] for k in ("title", "body")}}
            for i, a in enumerate(originals)
        )
    )
    # off by default: the zh-TW copy is not matched
    off = dd.check_many(reposts)
    assert all(v.verdict == "new" for v in off)
    with pytest.raises(ValueError, match="script_folding 'x2y'"):
        dd.set_setting("script_folding", "x2y")
    dd.set_setting("script_folding", "tw2sp")
    on = dd.check_many(reposts)
    assert [(v.verdict, v.matched_id) for v in on] == [("duplicate", f"cn{i}") for i in range(6)]
    with pytest.raises(ValueError, match="cannot be overridden per call"):
        dd.check_many(reposts, {"script_folding": None})
