"""Bad input: a clear error per item, the rest of the batch ingested, and the
rejected item kept (as bytes) in ingest_errors."""

import json

import pytest

from dedup_pg import Deduper, InputError
from dedup_pg.documents import parse_jsonl_line

GOOD = "今天上午,示例市举行新闻发布会,通报了前三季度全市经济运行的主要情况和下一步工作安排。"


def _batch_with(bad, dd):
    items = [
        {"id": "ok-1", "body": GOOD},
        bad,
        {"id": "ok-2", "body": GOOD.replace("示例市", "样本县")},
    ]
    return list(dd.ingest_many(items))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"id": "empty", "body": ""}, "body is empty or whitespace only"),
        ({"id": "blank", "body": " \n\t\u3000 "}, "body is empty or whitespace only"),
        ({"id": "markup", "body": "<p>&nbsp;</p><br/>"}, "empty after normalization"),
        ({"id": "nul", "body": "前半\x00后半"}, "NUL character (U+0000) at offset 2"),
        ({"id": "nul-title", "title": "t\x00", "body": GOOD}, "title contains a NUL"),
        ({"id": "bytes", "body": "中文".encode("gbk")}, "body is not valid UTF-8"),
        ({"id": "surrogate", "body": "半个\ud800字"}, "unpaired surrogate"),
        ({"id": "missing"}, "missing field: body"),
        ({"id": "not-text", "body": 12345}, "body must be a string, got int"),
        (
            {"id": "bad-time", "body": GOOD, "seen_at": "yesterday"},
            "seen_at 'yesterday' is not an ISO 8601 time",
        ),
        (
            {"id": "far-time", "body": GOOD, "seen_at": "0001-01-01T00:10:00+18:20"},
            "is out of range",
        ),
        ({"id": "huge", "body": "长" * 1_000_001}, "more than max_chars=1,000,000"),
        (["not", "an", "object"], "an item must be an object with a body, got list"),
    ],
)
def test_bad_item_is_reported_and_the_rest_ingested(dd, bad, message):
    verdicts = _batch_with(bad, dd)
    assert [v.verdict for v in verdicts] == ["new", "error", "new"]
    assert message in verdicts[1].error
    error, payload = dd.conn.execute("SELECT error, payload FROM ingest_errors").fetchone()
    assert message in error and payload  # what was received is kept
    assert dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 2


def test_undecodable_bytes_are_kept_verbatim(dd):
    raw = "示例".encode("gbk") + b"\xff"
    verdicts = list(dd.ingest_many([raw]))
    assert verdicts[0].verdict == "error"
    assert dd.conn.execute("SELECT payload FROM ingest_errors").fetchone()[0] == raw


def test_large_document_under_the_limit_is_ingested(dd, sina):
    body = "\n".join(a["body"] for a in sina[:300])[:900_000]
    v = dd.ingest({"id": "big", "body": body})
    assert v.verdict == "new"
    assert dd.is_duplicate(body).verdict == "duplicate"


def test_max_chars_is_a_setting(dd):
    dd.set_setting("max_chars", 30)
    v = dd.ingest({"id": "long", "body": GOOD})
    assert (
        v.verdict == "error"
        and f"document has {len(GOOD)} characters, more than max_chars=30" in v.error
    )


def test_unknown_setting_is_a_clear_error(dd):
    with pytest.raises(KeyError, match="unknown setting 'nope'"):
        dd.set_setting("nope", 1)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{bad json\n", "line 7: malformed JSON"),
        (b"[1, 2]\n", "line 7: expected a JSON object, got list"),
        (b'{"body": "\xe4\xb8"}\n', "line 7: not valid UTF-8"),
    ],
)
def test_malformed_jsonl_lines(line, message):
    with pytest.raises(InputError, match=message) as info:
        parse_jsonl_line(line, 7)
    assert info.value.raw == line and info.value.item_id == "line 7"


def test_parse_errors_pass_through_a_batch_and_worker_processes(dsn):
    lines = [
        json.dumps({"id": "a", "body": GOOD}).encode(),
        b"{oops",
        json.dumps({"id": "b"}).encode(),
    ]
    items = []
    for n, line in enumerate(lines, 1):
        try:
            items.append(parse_jsonl_line(line, n))
        except InputError as exc:
            items.append(exc)
    with Deduper(dsn) as dd:
        verdicts = list(dd.ingest_many(items, workers=1))
        assert [(v.id, v.verdict) for v in verdicts] == [
            ("a", "new"),
            ("line 2", "error"),
            ("b", "error"),
        ]
        assert (
            dd.conn.execute(
                "SELECT payload FROM ingest_errors WHERE external_id = 'line 2'"
            ).fetchone()[0]
            == b"{oops"
        )


def test_is_duplicate_with_bad_text_reports_an_error_without_recording(dd):
    v = dd.is_duplicate("   ")
    assert v.verdict == "error" and "empty" in v.error
    assert dd.conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 0
