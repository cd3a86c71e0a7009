"""Hostile JSONL lines: what crawlers and broken pipes actually hand over (for
testing an ingest pipeline: the fault suite and bench/faults.py use them).

``hostile_lines()`` gives (kind, raw line bytes) pairs, each of which must
come back as exactly one ``error`` verdict naming its line, with its bytes in
``ingest_errors``; good lines around them must be ingested as usual.
"""

from __future__ import annotations

import json

GOOD_BODY = "这是一段正常的正文，用来确认坏字段本身被拒绝，而不是正文。" * 3


def _obj(**fields: object) -> bytes:
    """A line from a JSON object; surrogates escaped (valid JSON), NaN allowed."""
    return json.dumps({"body": GOOD_BODY, **fields}, ensure_ascii=True).encode()


def hostile_lines() -> list[tuple[str, bytes]]:
    return [
        # strings PostgreSQL cannot store, in every text field
        *(
            (f"lone surrogate {s!r} in {field}", _obj(id=f"h-{field}-{i}", **{field: f"a{s}b"}))
            for i, s in enumerate(["\ud800", "\udfff"])
            for field in ("source", "title", "url", "content_type")
        ),
        ("lone surrogate in id", _obj(id="h-\udfff")),
        ("lone surrogate in body", json.dumps({"id": "h-body-s", "body": "半个\ud800字"}).encode()),
        ("NUL in body", json.dumps({"id": "h-nul", "body": "a\x00b"}).encode()),
        ("NUL in source", _obj(id="h-nul-source", source="x\x00y")),
        # times: not numbers, not times, absurd, the wrong unit
        *(
            (
                f"seen_at {text}",
                b'{"id": "h-t%d", "body": "%s", "seen_at": %s}'
                % (i, GOOD_BODY.encode(), text.encode()),
            )
            for i, text in enumerate(
                [
                    "NaN",
                    "Infinity",
                    "-Infinity",
                    "-1e12",
                    "1e20",
                    "3093527980800",
                    "true",
                    "[]",
                    "{}",
                    '"yesterday"',
                    '"0001-01-01T00:00:00Z"',
                    '"9999-12-31T23:59:59-01:00"',
                    "-62135596800",
                    "253402300799",
                ]
            )
        ),
        (
            "published_at NaN",
            b'{"id": "h-pub", "body": "%s", "published_at": NaN}' % GOOD_BODY.encode(),
        ),
        # ids: too large for an int to print, wrong types, too long for an index
        ("5,000-digit integer id", b'{"id": ' + b"7" * 5000 + b', "body": "x"}'),
        ("float id", _obj(id=1.5)),
        ("list id", _obj(id=[1, 2])),
        ("object id", _obj(id={"a": 1})),
        ("boolean id", _obj(id=True)),
        ("20,000-character id", _obj(id="i" * 20_000)),
        ("20,000-character source", _obj(id="h-long-source", source="s" * 20_000)),
        ("100,000-character url", _obj(id="h-long-url", url="http://x/" + "u" * 100_000)),
        # bodies
        ("missing body", b'{"id": "h-nobody", "title": "t"}'),
        ("empty body", b'{"id": "h-empty", "body": ""}'),
        ("whitespace body", b'{"id": "h-ws", "body": " \\u3000\\n\\t "}'),
        ("number body", b'{"id": "h-numbody", "body": 42}'),
        ("list body", b'{"id": "h-listbody", "body": ["a"]}'),
        ("null body", b'{"id": "h-nullbody", "body": null}'),
        ("huge body", json.dumps({"id": "h-huge", "body": "长" * 1_000_001}).encode()),
        # not JSON objects at all
        ("deeply nested array", b"[" * 100_000),
        ("deeply nested object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
        ("truncated JSON", b'{"id": "h-trunc", "body": "abc'),
        ("trailing garbage", b'{"id": "h-garbage", "body": "abc"} xyz'),
        ("invalid UTF-8", b'{"id": "h-bytes", "body": "\xff\xfe\xc3("}'),
        ("GBK bytes", '{"id": "h-gbk", "body": "中文正文"}'.encode("gbk")),
        ("a JSON array", b'[{"body": "abc"}]'),
        ("a JSON string", b'"just a string"'),
        ("JSON null", b"null"),
        ("a number", b"12345"),
        ("bare text", "这不是 JSON".encode()),
    ]
