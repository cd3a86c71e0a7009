"""A real Scrapy crawl against a local site: real Sina articles on site A, and
reposts of some of them on site B under another template (exact, with a banner,
with a new headline). The stored items must be exactly the distinct stories,
and every dropped item must name the one it duplicates."""

import html
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

TEMPLATE_A = """<html><head><title>{title} - 站点A</title><script>var ad = 1;</script></head><body>
<nav><a href="/">首页</a> | <a href="/news">新闻</a> | <a href="/tech">科技</a></nav>
<div class="article"><h1>{title}</h1>{paragraphs}</div>
<aside>相关推荐:<a href="/x">另一篇文章</a></aside><footer>站点A 版权所有</footer></body></html>"""
TEMPLATE_B = """<html><body><header>站点B 新闻频道</header>
<article><h2 class="headline">{title}</h2><section id="content">{paragraphs}</section></article>
<div class="ads">广告位招租</div></body></html>"""


def _paragraphs(body):
    sentences = [s + "。" for s in body.replace("\n", "").split("。") if s.strip()]
    return "".join(
        f"<p>{html.escape(''.join(sentences[i : i + 3]))}</p>" for i in range(0, len(sentences), 3)
    )


def _site(sina):
    articles = [a for a in sina[:200] if 400 <= len(a["body"]) <= 3000][:16]
    pages, groups = {}, {}
    for n, a in enumerate(articles):
        url = f"/site-a/{n}.html"
        pages[url] = TEMPLATE_A.format(
            title=html.escape(a["title"]), paragraphs=_paragraphs(a["body"])
        )
        groups[url] = n
    reposts = [
        (0, "exact"),
        (1, "exact"),
        (2, "exact"),
        (3, "exact"),
        (4, "exact"),
        (5, "banner"),
        (6, "banner"),
        (7, "banner"),
        (8, "retitled"),
        (9, "retitled"),
    ]
    for k, (n, kind) in enumerate(reposts):
        a = articles[n]
        title, body = a["title"], a["body"]
        if kind == "banner":
            body += "。本文转载自站点A,版权归原作者所有,如有侵权请联系删除。"
        if kind == "retitled":
            title = "转载:" + a["title"][::-1][:12]
        url = f"/site-b/{k}.html"
        pages[url] = TEMPLATE_B.format(title=html.escape(title), paragraphs=_paragraphs(body))
        groups[url] = n
    index = "".join(f'<li><a href="{u}">{u}</a></li>' for u in pages)
    pages["/"] = f'<html><body><ul class="index">{index}</ul></body></html>'
    return pages, groups, len(articles)


@pytest.fixture
def site(sina):
    pages, groups, stories = _site(sina)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            page = pages.get(self.path)
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write((page or "not found").encode("utf-8"))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", groups, stories
    server.shutdown()


def test_scrapy_crawl_drops_exactly_the_duplicates(site, dsn, tmp_path):
    base, groups, stories = site
    out = tmp_path / "crawl.json"
    result = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("scrapy_crawl.py")),
            f"{base}/",
            dsn,
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    crawl = json.loads(out.read_text(encoding="utf-8"))
    group_of = {base + path: n for path, n in groups.items()}
    stored = {item["url"]: item for item in crawl["stored"]}
    # exactly one item per story is stored, whichever copy was crawled first
    assert sorted(group_of[u] for u in stored) == list(range(stories))
    assert all(item["dedup"]["verdict"] == "new" for item in stored.values())
    # every other copy is dropped, naming the stored copy of its story
    assert len(crawl["dropped"]) == len(group_of) - stories == 10
    kept_url_of = {group_of[u]: u for u in stored}
    for drop in crawl["dropped"]:
        assert drop["reason"].startswith(f"duplicate of {kept_url_of[group_of[drop['url']]]} ")
    assert crawl["stats"]["dedup_pg/new"] == stories
    assert sum(v for k, v in crawl["stats"].items() if k.startswith("dedup_pg/duplicate/")) == 10
