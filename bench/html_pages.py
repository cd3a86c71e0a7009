"""Realistic Chinese news pages built from real articles, for extraction tests.

Real sina2018 articles (read from ``../shared/data``, never copied into the
repository) are wrapped in four site templates modelled on Chinese news sites:
navigation bars, breadcrumbs, a "热门排行" sidebar, inline ad slots inside the
article, a "相关推荐" block of other headlines (varying per page), share
buttons, comments, copyright footers, inline and external scripts. Two sites
serve GBK/GB18030 bytes whose ``<meta charset>`` is wrong (utf-8; big5), one
serves UTF-8, one a correct GBK declaration.

Each page comes with its ground truth: the article's title and its paragraphs
(the body cut into paragraphs of 1-4 sentences, since the source text has no
paragraph breaks).

    python bench/html_pages.py OUT_DIR [--articles N]   # writes OUT_DIR/<site>/<id>.html + truth.jsonl
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from common import DATA, read_jsonl

_SENTENCE = re.compile(r"(?<=[。！？!?])(?![”」』）)])")


def paragraphs(body: str, rng: random.Random) -> list[str]:
    """Cut a body without paragraph breaks into paragraphs of 1-4 sentences."""
    sentences = [s for s in _SENTENCE.split(body) if s.strip()]
    out: list[str] = []
    while sentences:
        n = rng.randint(1, 4)
        out.append("".join(sentences[:n]).strip())
        sentences = sentences[n:]
    return out


@dataclass(frozen=True)
class Site:
    name: str
    encoding: str  # bytes on the wire
    declared: str  # what <meta charset> says (may be wrong)
    channels: tuple[str, ...]
    hot: tuple[str, ...]  # the sidebar's headlines: the same on every page
    related_pool: tuple[str, ...]  # "相关推荐" headlines: five picked per page
    ads: tuple[str, ...]  # inline ad texts, one picked per page


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _related(site: Site, rng: random.Random, n: int = 5) -> list[str]:
    return rng.sample(site.related_pool, n)


def render_portal(site: Site, title: str, paras: list[str], rng: random.Random, n: int) -> str:
    """A portal page (Sina style): div layout, inline ad after paragraph 2."""
    nav = "".join(f'<li><a href="/{i}/">{_e(c)}</a></li>' for i, c in enumerate(site.channels))
    body = []
    for i, p in enumerate(paras):
        body.append(f"<p>{_e(p)}</p>")
        if i == 1:
            body.append(
                f'<div class="ad-slot" id="ad_{n}"><a href="https://ad.example.cn/c?{n}">{_e(rng.choice(site.ads))}</a>'
                '<script>(function(){var s=document.createElement("script");s.src="//ad.example.cn/show.js";'
                "document.body.appendChild(s);})();</script></div>"
            )
    hot = "".join(f'<li><a href="/hot/{i}.shtml">{_e(t)}</a></li>' for i, t in enumerate(site.hot))
    rel = "".join(
        f'<li><a href="/rel/{i}.shtml">{_e(t)}</a></li>' for i, t in enumerate(_related(site, rng))
    )
    return f"""<!DOCTYPE html>
<html><head><meta http-equiv="Content-Type" content="text/html; charset={site.declared}">
<title>{_e(title)}_{site.name}新闻</title>
<meta name="keywords" content="{_e(title[:10])},新闻,{site.name}">
<link rel="stylesheet" href="//static.{site.name}.cn/css/main.css">
<script>var _hmt=_hmt||[];(function(){{var hm=document.createElement("script");hm.src="https://hm.baidu.com/hm.js?abc";}})();</script>
</head><body>
<div class="top-bar"><a href="/">{site.name}首页</a> | <a href="/login">登录</a> | <a href="/reg">注册</a> | <a href="/m">手机版</a></div>
<div class="nav"><ul>{nav}</ul></div>
<div class="crumb"><a href="/">首页</a> &gt; <a href="/news/">新闻中心</a> &gt; 正文</div>
<div class="main"><div class="article-wrap">
<h1 class="main-title">{_e(title)}</h1>
<div class="date-source"><span class="date">2018年11月{rng.randint(1, 28):02d}日 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}</span> <a class="source">{site.name}综合</a></div>
<div class="article" id="artibody">
{"".join(body)}
<p class="show_author">责任编辑：{rng.choice(["张明", "李华", "王强", "赵敏"])}</p>
</div>
<div class="share">分享到：<a>微博</a> <a>微信</a> <a>QQ空间</a></div>
<div class="related"><h3>相关推荐</h3><ul>{rel}</ul></div>
</div>
<div class="sidebar"><h3>热门排行</h3><ol>{hot}</ol>
<div class="ad-side"><a href="https://ad.example.cn/side">{_e(site.ads[0])}</a></div></div>
</div>
<div class="footer"><p><a href="/about">关于我们</a> | <a href="/contact">联系我们</a> | <a href="/jobs">招聘信息</a> | <a href="/law">网站律师</a></p>
<p>Copyright © 1996-2018 {site.name.upper()} Corporation, All Rights Reserved</p>
<p>{site.name}公司 版权所有 京ICP证000{len(site.name)}23号</p></div>
<script src="//static.{site.name}.cn/js/final.js"></script>
</body></html>"""


def render_table(site: Site, title: str, paras: list[str], rng: random.Random, n: int) -> str:
    """An old portal: table layout, <br> between paragraphs, font tags."""
    nav = " | ".join(f'<a href="/{i}/">{_e(c)}</a>' for i, c in enumerate(site.channels))
    text = "<br><br>\n".join(f"　　{_e(p)}" for p in paras)
    hot = "<br>".join(f'·<a href="/h/{i}.htm">{_e(t)}</a>' for i, t in enumerate(site.hot))
    rel = "<br>".join(
        f'·<a href="/r/{i}.htm">{_e(t)}</a>' for i, t in enumerate(_related(site, rng))
    )
    return f"""<html><head><meta http-equiv="Content-Type" content="text/html; charset={site.declared}">
<title>{site.name}网--{_e(title)}</title>
<style>.f14{{font-size:14px;line-height:24px}} td{{font-size:12px}}</style></head>
<body topmargin=0>
<table width=960 align=center><tr><td><img src="/images/logo.gif"> {nav}</td></tr></table>
<table width=960 align=center><tr><td width=680 valign=top>
<table width=100%><tr><td>您现在的位置：<a href="/">{site.name}网</a> &gt;&gt; <a href="/news">新闻</a> &gt;&gt; 正文</td></tr></table>
<table width=100%><tr><td align=center><font size=5><b>{_e(title)}</b></font></td></tr>
<tr><td align=center>来源：{site.name}网　作者：本站记者　点击数：{rng.randint(100, 9999)}　更新时间：2018-11-{rng.randint(1, 28):02d}</td></tr>
<tr><td class=f14>
{text}
</td></tr>
<tr><td align=right>【<a href="javascript:window.print()">打印本页</a>】【<a href="javascript:window.close()">关闭窗口</a>】</td></tr>
<tr><td><b>相关文章：</b><br>{rel}</td></tr>
<tr><td><font color=red>{_e(rng.choice(site.ads))}</font></td></tr>
</table></td>
<td width=270 valign=top bgcolor=#f0f0f0><b>本周热点</b><br>{hot}<br><br><b>网站公告</b><br>本站招聘兼职编辑若干名，详情请联系客服。</td></tr></table>
<table width=960 align=center><tr><td align=center>{site.name}网 版权所有 未经许可不得转载<br>地址：北京市海淀区中关村大街1号　电话：010-8888{len(site.name)}888<br>备案号：京ICP备0{len(site.name)}123号</td></tr></table>
<script language="javascript" src="/js/count.js"></script>
</body></html>"""


def render_html5(site: Site, title: str, paras: list[str], rng: random.Random, n: int) -> str:
    """A modern site: HTML5 landmarks, comments, prev/next links."""
    nav = "".join(f'<a href="/c/{i}">{_e(c)}</a>' for i, c in enumerate(site.channels))
    body = "\n".join(f"<p>{_e(p)}</p>" for p in paras)
    if len(paras) > 3:  # an ad box in the middle of the article
        cut = len(paras) // 2
        parts = body.split("\n")
        parts.insert(cut, f'<aside class="inline-ad"><p>{_e(rng.choice(site.ads))}</p></aside>')
        body = "\n".join(parts)
    hot = "".join(f"<li><a href='/a/{i}'>{_e(t)}</a></li>" for i, t in enumerate(site.hot))
    rel = "".join(
        f"<li><a href='/a/r{i}'>{_e(t)}</a></li>" for i, t in enumerate(_related(site, rng))
    )
    comments = "".join(
        f'<div class="comment"><span class="user">{u}</span><p>{_e(c)}</p></div>'
        for u, c in rng.sample(
            [
                ("网友1234", "说得太对了，支持一下！"),
                ("北京网友", "这个问题值得深思。"),
                ("匿名用户", "楼上说的有道理"),
                ("上海网友", "又是这种新闻，看腻了。"),
                ("广州网友", "希望有关部门重视。"),
            ],
            3,
        )
    )
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="{site.declared}"><meta name="viewport" content="width=device-width">
<title>{_e(title)} - {site.name}</title>
<script type="application/ld+json">{{"@type":"NewsArticle","publisher":"{site.name}"}}</script>
</head><body>
<header><div class="logo">{site.name}</div><nav>{nav}<a href="/app">下载客户端</a></nav>
<form class="search"><input placeholder="搜索新闻"><button>搜索</button></form></header>
<main><article>
<h1>{_e(title)}</h1>
<div class="meta"><time>2018-11-{rng.randint(1, 28):02d}</time> <span>{site.name}</span> <span>阅读 {rng.randint(1000, 99999)}</span></div>
<div class="content">
{body}
</div>
<div class="tags">标签：<a>新闻</a><a>热点</a></div>
</article>
<div class="share-bar">分享：<button>微信</button><button>微博</button><button>复制链接</button></div>
<div class="prev-next"><a href="/a/prev">上一篇：{_e(site.related_pool[n % len(site.related_pool)])}</a><a href="/a/next">下一篇：{_e(site.related_pool[(n + 7) % len(site.related_pool)])}</a></div>
<section class="recommend"><h2>相关推荐</h2><ul>{rel}</ul></section>
<section class="comments"><h2>网友评论</h2>{comments}<a href="/c/more">查看更多评论</a></section>
</main>
<aside class="side"><h2>24小时热榜</h2><ol>{hot}</ol></aside>
<footer><p>© 2018 {site.name} 保留所有权利</p><p>违法和不良信息举报电话：12377</p><p><a href="/privacy">隐私政策</a> · <a href="/terms">用户协议</a></p></footer>
<script>window.__INITIAL_STATE__={{"page":"article","id":{n}}};</script>
<script src="https://cdn.{site.name}.com/app.{n % 7}.js" async></script>
</body></html>"""


def render_mobile(site: Site, title: str, paras: list[str], rng: random.Random, n: int) -> str:
    """A mobile page: div soup, 'open the app' prompts, lazy images."""
    body = "\n".join(f'<div class="para">{_e(p)}</div>' for p in paras)
    rel = "".join(
        f'<div class="feed-item"><a href="/m/{i}"><div class="t">{_e(t)}</div><div class="s">{site.name} {rng.randint(1, 999)}评</div></a></div>'
        for i, t in enumerate(_related(site, rng, 6))
    )
    return f"""<!DOCTYPE html><html><head><meta charset="{site.declared}">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>{_e(title)}</title></head>
<body><div id="app"><div class="m-header"><span class="back">返回</span><span class="logo">{site.name}</span><span class="menu">频道</span></div>
<div class="open-app">打开{site.name}APP，阅读体验更佳</div>
<div class="m-article"><div class="m-title">{_e(title)}</div>
<div class="m-info">{site.name}号 · {rng.randint(1, 12)}小时前</div>
<div class="m-content">
<img data-src="//img.{site.name}.cn/{n}.jpg" class="lazy">
{body}
</div>
<div class="m-more">展开全文</div>
<div class="m-ad"><div class="ad-tag">广告</div>{_e(rng.choice(site.ads))}</div>
</div>
<div class="m-feed"><div class="feed-title">猜你喜欢</div>{rel}</div>
<div class="m-footer">{site.name}新闻客户端 · 用户协议 · 隐私政策 · 举报</div></div>
<script>document.querySelectorAll('.lazy').forEach(function(i){{i.src=i.dataset.src}});</script>
</body></html>"""


RENDER = {
    "portal": render_portal,
    "oldtable": render_table,
    "html5": render_html5,
    "mobile": render_mobile,
}


def make_sites(headlines: list[str], rng: random.Random) -> list[Site]:
    """Four sites, each with its own headline pools (from articles not used as pages)."""
    pools = [headlines[i * 60 : (i + 1) * 60] for i in range(4)]
    ads = [
        (
            "新用户注册即送50元红包，立即领取！",
            "点击下载APP，看更多精彩资讯",
            "年终大促，全场五折起",
        ),
        ("本站推荐：免费领取流量卡", "专业炒股软件，免费试用30天", "招商加盟，轻松创业"),
        ("扫码关注公众号，每天推送热点新闻", "热门手游，登录即送VIP", "名师一对一辅导，限时免费"),
        ("打开APP领取现金红包", "看新闻赚零花钱", "限时特惠：会员低至1元"),
    ]
    spec = [
        (
            "portal",
            "utf-8",
            "utf-8",
            ("新闻", "财经", "科技", "体育", "娱乐", "汽车", "教育", "健康", "时尚", "房产"),
        ),
        (
            "oldtable",
            "gbk",
            "utf-8",
            ("首页", "国内", "国际", "社会", "军事", "评论", "图片", "视频"),
        ),
        (
            "html5",
            "utf-8",
            "utf-8",
            ("推荐", "热点", "本地", "科技", "财经", "娱乐", "体育", "视频", "问答"),
        ),
        ("mobile", "gb18030", "big5", ("要闻", "视频", "娱乐", "体育")),
    ]
    return [
        Site(
            name=name,
            encoding=enc,
            declared=declared,
            channels=channels,
            hot=tuple(pool[:10]),
            related_pool=tuple(pool[10:]),
            ads=ads[i],
        )
        for i, ((name, enc, declared, channels), pool) in enumerate(zip(spec, pools, strict=True))
    ]


def render(site: Site, title: str, paras: list[str], seed: int) -> bytes:
    """One page of ``site`` as the bytes a crawler would receive."""
    rng = random.Random(seed)
    page = RENDER[site.name](site, title, paras, rng, seed)
    return page.encode(site.encoding, errors="xmlcharrefreplace")


def load_articles(n: int, offset: int = 0) -> tuple[list[dict], list[str]]:
    """``n`` sina2018 articles with a title and 200-3,000 characters of body,
    from ``offset``, and 240 headlines of other articles for the templates.
    Articles with a known near-duplicate in the corpus (a pair of
    pairs/sina2018_ngram_candidates_unlabelled) are left out: every merge
    between pages of different articles is then a false one."""
    rows = read_jsonl(DATA / "news" / "sina2018.jsonl")
    pairs = read_jsonl(DATA / "pairs" / "sina2018_ngram_candidates_unlabelled.jsonl")
    in_pairs = {p["a_id"] for p in pairs} | {p["b_id"] for p in pairs}
    seen: set[str] = set()
    good = []
    for r in rows:
        body, title = (r.get("body") or "").strip(), (r.get("title") or "").strip()
        if r["id"] in in_pairs:
            continue
        if title and 200 <= len(body) <= 3000 and body[:80] not in seen and "\n" not in body:
            seen.add(body[:80])
            good.append(r)
    headlines = [r["title"] for r in good[-240:]]
    return good[offset : offset + n], headlines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--articles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    articles, headlines = load_articles(args.articles)
    sites = make_sites(headlines, rng)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "truth.jsonl").open("w", encoding="utf-8") as truth:
        for i, a in enumerate(articles):
            site = sites[i % len(sites)]
            paras = paragraphs(a["body"], rng)
            path = args.out / site.name / f"{a['id']}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(render(site, a["title"], paras, i))
            row = {"file": f"{site.name}/{path.name}", "title": a["title"], "paragraphs": paras}
            truth.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(articles)} pages in {args.out}")


if __name__ == "__main__":
    main()
