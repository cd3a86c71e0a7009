"""Concurrent writers: the same or near-same text ingested at the same moment
by several processes, each on its own connection, yields exactly one new
document."""

import multiprocessing as mp

import pytest

from dedup_pg import Deduper

WRITERS = 4


def _writer(dsn, docs, barrier, results):
    with Deduper(dsn, migrate=False) as dd:
        dd.is_duplicate("预热连接与分词器,让各进程在同一时刻开始写入。")  # warm up before the race
        barrier.wait(timeout=60)
        for v in dd.ingest_many(docs, batch_size=len(docs)):
            results.put((v.id, v.verdict, v.layer, v.matched_doc_id))


def near_same_writers(article):
    """One batch per writer: the same article, each with another banner line
    (one without): SimHash-near, never byte-identical."""
    banners = [
        "\n版权声明:本文由甲网原创",
        "\n(来源:乙报 编辑:丙)",
        "\n欢迎关注丁网官方微博获取更多资讯",
        "",
    ]
    return [
        [{"id": f"w{w}", "title": article["title"], "body": article["body"] + banners[w]}]
        for w in range(WRITERS)
    ]


def _race(dsn, docs_per_writer):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(docs_per_writer))
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(dsn, docs, barrier, results)) for docs in docs_per_writer
    ]
    for p in procs:
        p.start()
    out = [results.get(timeout=120) for docs in docs_per_writer for _ in docs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return out


@pytest.mark.slow
def test_same_text_from_parallel_writers_gives_one_new_document(dsn, sina):
    rounds = [sina[i] for i in range(5)]
    docs = [
        [{"id": f"w{w}-r{r}", "title": a["title"], "body": a["body"]} for r, a in enumerate(rounds)]
        for w in range(WRITERS)
    ]
    out = _race(dsn, docs)
    for r in range(len(rounds)):
        verdicts = [v for v in out if v[0].endswith(f"-r{r}")]
        assert sorted(v[1] for v in verdicts) == ["duplicate"] * (WRITERS - 1) + ["new"], verdicts
        assert {v[2] for v in verdicts if v[1] == "duplicate"} == {"exact"}
    with Deduper(dsn, migrate=False) as dd:
        assert dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == len(rounds)


@pytest.mark.slow
def test_near_same_text_from_parallel_writers_gives_one_new_document(dsn, sina):
    docs = near_same_writers(sina[10])
    out = _race(dsn, docs)
    assert sorted(v[1] for v in out) == ["duplicate"] * (WRITERS - 1) + ["new"], out
    new_doc = next(v for v in out if v[1] == "new")
    with Deduper(dsn, migrate=False) as dd:
        (new_id,) = dd.conn.execute("SELECT doc_id FROM documents").fetchone()
    assert all(v[3] == new_id for v in out if v[1] == "duplicate"), (out, new_doc)


@pytest.mark.slow
def test_parallel_writers_with_large_batches_do_not_deadlock(dsn, sina):
    # overlapping large batches take the table lock; small ones take row locks
    docs = [
        [
            {"id": f"w{w}-{i}", "title": a["title"], "body": a["body"]}
            for i, a in enumerate(sina[300:500])
        ]
        for w in range(3)
    ] + [[{"id": "small", "title": sina[300]["title"], "body": sina[300]["body"]}]]
    out = _race(dsn, docs)
    news = [v for v in out if v[1] in ("new", "review")]
    with Deduper(dsn, migrate=False) as dd:
        assert dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == len(news)
    assert len(news) <= 200
