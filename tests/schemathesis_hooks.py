"""Schemathesis hooks for tests/test_service.py (loaded with SCHEMATHESIS_HOOKS).

Schemathesis cannot generate lone surrogates itself: its strings are drawn
with a codec (default UTF-8, which has no surrogates), and with no codec it
excludes category Cs on purpose ("cannot be encoded for the wire"). Yet JSON
carries them (``"\\ud800"`` is valid JSON, and crawlers do send it). So every
generated body goes through :func:`flatmap_body`, which lets Hypothesis put a
lone surrogate into any string of it (keys included) and give any object the
text fields of a document holding one, and shrink from there. The second part
matters: left alone, Schemathesis sends documents as ``{}`` or all nulls
nearly always, and never reached ``id`` or ``source`` with a string.
"""

from typing import Any

import schemathesis
from hypothesis import strategies as st

# the ends of both halves, and any other code point of them
LONE_SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]) | st.characters(
    categories=["Cs"]
)
# a real sentence too, so that a body gets past the empty-text check
TEXT = "今天上午,示例市举行新闻发布会,通报了前三季度全市经济运行的主要情况和下一步工作安排。"
# the text fields of a document (DocumentIn in dedup_pg/service.py)
FIELDS = ("id", "title", "body", "url", "source")


def _inserted(value: str) -> st.SearchStrategy[str]:
    return st.builds(
        lambda s, i: value[:i] + s + value[i:], LONE_SURROGATES, st.integers(0, len(value))
    )


SURROGATE_TEXT = (st.sampled_from(["", "a", TEXT]) | st.text(max_size=12)).flatmap(_inserted)


def _string(value: str) -> st.SearchStrategy[str]:
    return st.just(value) | _inserted(value)


def with_surrogates(value: Any) -> st.SearchStrategy[Any]:
    """``value``, or it with lone surrogates in some of its strings and
    documents' text fields holding them added to some of its objects."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return st.tuples(*map(with_surrogates, value)).map(list)
    if isinstance(value, dict):
        items = st.tuples(*[st.tuples(_string(k), with_surrogates(v)) for k, v in value.items()])
        added = st.dictionaries(st.sampled_from(FIELDS), SURROGATE_TEXT, max_size=len(FIELDS))
        return st.builds(lambda kv, more: {**dict(kv), **more}, items, st.just({}) | added)
    return st.just(value)


@schemathesis.hook
def flatmap_body(ctx: Any, body: Any) -> st.SearchStrategy[Any]:
    # the body as generated, or with surrogates: both kinds are tried
    return st.just(body) | with_surrogates(body)
