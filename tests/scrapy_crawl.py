"""A real Scrapy crawl through DedupPipeline (run by test_scrapy.py in its own
process: a Twisted reactor cannot be restarted inside pytest).

usage: python scrapy_crawl.py START_URL DSN OUT.json
"""

import json
import sys

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess


class NewsSpider(scrapy.Spider):
    name = "news"

    def __init__(self, start: str, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        for href in response.css("ul.index a::attr(href)").getall():
            yield response.follow(href, self.parse_article)

    def parse_article(self, response):
        # two site templates: div.article (site A) and article > section#content (site B)
        title = response.css("div.article h1::text, article h2.headline::text").get()
        paragraphs = response.css("div.article p::text, article section#content p::text").getall()
        yield {
            "url": response.url,
            "title": title,
            "body": "\n".join(paragraphs),
            "source": response.url.split("/")[3],
        }


def main(start: str, dsn: str, out: str) -> None:
    stored, dropped = [], []
    process = CrawlerProcess(
        settings={
            "ITEM_PIPELINES": {"dedup_pg.scrapy.DedupPipeline": 100},
            "DEDUP_PG_DSN": dsn,
            "DEDUP_PG_BATCH_SIZE": 8,
            "DEDUP_PG_MAX_DELAY": 0.3,
            "LOG_LEVEL": "ERROR",
            "ROBOTSTXT_OBEY": False,
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    crawler = process.create_crawler(NewsSpider)

    # named functions: Scrapy holds signal receivers by weak reference
    def on_scraped(item, response, spider):
        stored.append(dict(item))

    def on_dropped(item, response, exception, spider):
        dropped.append({"url": item["url"], "reason": str(exception)})

    crawler.signals.connect(on_scraped, signals.item_scraped)
    crawler.signals.connect(on_dropped, signals.item_dropped)
    process.crawl(crawler, start=start)
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("dedup_pg/")}
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"stored": stored, "dropped": dropped, "stats": stats}, fh, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
