"""From raw crawled pages to text: byte decoding and main-content extraction.

Crawlers hand over pages, not articles: bytes in GBK, GB18030, Big5 or UTF-8
whose ``<meta charset>`` is often wrong, wrapped in navigation, sidebars,
"相关推荐" blocks and footers. This module turns such a page into the article's
title and text; everything after it (normalization, fingerprints) sees text only.

Extractors are small backends behind one interface (:class:`Extractor`), picked
by name (:data:`DEFAULT_EXTRACTOR`, measured in ``bench/extraction.py``). They
and the decoder need the optional extra: ``pip install 'pg-text-dedup[html]' (in a checkout: pip install '.[html]')``.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from .errors import InputError

#: The extractor used unless another is named. Chosen on measured accuracy and
#: speed over Chinese news pages in four site templates (bench/results/extraction.md).
DEFAULT_EXTRACTOR = "gne"

_EXTRA_HINT = "pip install 'pg-text-dedup[html]' (in a checkout: pip install '.[html]')"


def _need(module: str) -> Any:
    """Import an optional dependency, or say which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InputError(
            f"HTML and byte input need the 'html' extra ({module} is missing): {_EXTRA_HINT}"
        ) from exc


def require_extra() -> None:
    """Fail early, naming the extra, when HTML input cannot be handled."""
    for module in ("charset_normalizer", "ftfy", "lxml.html", "warcio", *_BACKEND_MODULES.values()):
        _need(module)


# -- bytes -> str -------------------------------------------------------------

#: Encodings decoded as their superset: a page declared (or detected) as GB2312
#: or GBK often holds characters only GB18030 has.
_SUPERSET = {"gb2312": "gb18030", "gbk": "gb18030", "big5": "big5hkscs", "cp936": "gb18030"}
#: Preferred over a near-equal non-Chinese guess (short GBK texts sometimes
#: look like CP949 or Shift-JIS to a statistical detector).
_CHINESE = {"gb18030", "gbk", "gb2312", "big5", "big5hkscs", "hz", "utf_8"}
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
#: Share of replacement or control characters above which a decoded text is
#: garbage, not a page.
_MAX_BAD_SHARE = 0.01
_BAD_CHARS = re.compile("[\ufffd\x00-\x08\x0e-\x1f\x7f-\x9f]")


def declared_charset(data: bytes) -> str | None:
    """The charset a page declares in its first 4 kB (often wrong: only a hint)."""
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii", "replace").lower() if match else None


def _codec(name: str) -> str | None:
    try:
        canonical = codecs.lookup(name).name
    except LookupError:
        return None
    return _SUPERSET.get(canonical, canonical)


def decode_bytes(data: bytes, declared: str | None = None) -> str:
    """Decode a page or a file: BOM, else strict UTF-8, else the detector's
    guess (charset-normalizer, ignoring the page's own declaration, which is
    wrong often enough to be only a fallback), then repair mojibake (ftfy).

    Raises :class:`InputError` when no encoding yields clean text: a garbled
    text stored in the database is worse than a rejected one.
    """
    if not data.strip():
        raise InputError("the page is empty")
    text = None
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data.decode(encoding, errors="strict")
            break
    if text is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = _detect(data, declared or declared_charset(data))
    text = _need("ftfy").fix_encoding(text)
    bad = len(_BAD_CHARS.findall(text))
    if bad > _MAX_BAD_SHARE * len(text):
        raise InputError(
            f"cannot decode the page: {bad} of {len(text)} characters are replacement or "
            "control characters in the best guess (binary data, or an unknown encoding)"
        )
    return text


def _detect(data: bytes, declared: str | None) -> str:
    cn = _need("charset_normalizer")
    matches = list(cn.from_bytes(data, preemptive_behaviour=False))
    if matches:
        best = matches[0]
        for match in matches[1:]:
            if match.encoding in _CHINESE and match.chaos <= best.chaos + 0.1:
                best = match
                break
        codec = _codec(best.encoding) or best.encoding
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            return str(best)
    # The detector found nothing it trusts (a short or oddly mixed page): the
    # declared charset, then the Chinese encodings, each strictly.
    for name in (declared, "gb18030", "big5hkscs"):
        codec = _codec(name) if name else None
        if codec:
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                pass
    raise InputError(
        "cannot decode the page: not UTF-8, "
        + (f"not the declared {declared}, " if declared else "")
        + "and no encoding detected"
    )


# -- html -> text -------------------------------------------------------------


@dataclass(frozen=True)
class Extracted:
    """The main content of a page: title (if found) and text, one paragraph a line."""

    title: str | None
    text: str


class Extractor(Protocol):
    """A main-content extractor backend."""

    name: str

    def extract(self, html: str, url: str | None = None) -> Extracted: ...


def _text_of(element: Any) -> str:
    """Text of an lxml element, one block element a line."""
    for br in element.iter("br"):
        br.tail = "\n" + (br.tail or "")
    for block in element.iter(
        "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "blockquote", "section"
    ):
        block.tail = "\n" + (block.tail or "")
        if block.text:
            block.text = "\n" + block.text
    text = element.text_content()
    return "\n".join(line.strip() for line in text.split("\n") if line.strip())


class TrafilaturaExtractor:
    """trafilatura (heuristics plus jusText and readability fallbacks)."""

    name = "trafilatura"

    def extract(self, html: str, url: str | None = None) -> Extracted:
        trafilatura = _need("trafilatura")
        doc = trafilatura.bare_extraction(
            html, url=url, include_comments=False, include_tables=True, with_metadata=True
        )
        if doc is None:
            return Extracted(None, "")
        return Extracted(getattr(doc, "title", None) or None, getattr(doc, "text", None) or "")


class ReadabilityExtractor:
    """readability-lxml (a port of Arc90 Readability)."""

    name = "readability"

    def extract(self, html: str, url: str | None = None) -> Extracted:
        readability = _need("readability")
        lxml_html = _need("lxml.html")
        doc = readability.Document(html, url=url)
        summary = doc.summary(html_partial=True)
        text = _text_of(lxml_html.fromstring(summary)) if summary.strip() else ""
        return Extracted(doc.short_title() or None, text)


class GneExtractor:
    """GNE (GeneralNewsExtractor): text density and punctuation, tuned on Chinese news."""

    name = "gne"

    def extract(self, html: str, url: str | None = None) -> Extracted:
        gne = _need("gne")
        result = gne.GeneralNewsExtractor().extract(
            html, noise_node_list=["//script", "//style", "//footer", "//nav", "//aside"]
        )
        text = result.get("content") or ""
        text = "\n".join(line.strip() for line in text.split("\n") if line.strip())
        return Extracted(result.get("title") or None, text)


_BACKEND_MODULES = {"trafilatura": "trafilatura", "readability": "readability", "gne": "gne"}
EXTRACTORS: dict[str, Callable[[], Extractor]] = {
    "trafilatura": TrafilaturaExtractor,
    "readability": ReadabilityExtractor,
    "gne": GneExtractor,
}


@cache
def get_extractor(name: str | None = None) -> Extractor:
    """The extractor called ``name`` (default: :data:`DEFAULT_EXTRACTOR`)."""
    name = name or DEFAULT_EXTRACTOR
    try:
        return EXTRACTORS[name]()
    except KeyError:
        raise ValueError(
            f"unknown HTML extractor {name!r} (one of: {', '.join(sorted(EXTRACTORS))})"
        ) from None


def page_text(page: str | bytes, url: str | None = None, extractor: str | None = None) -> Extracted:
    """Decode (if bytes) and extract one page. Raises :class:`InputError` when
    the page cannot be decoded or holds no main text."""
    html = decode_bytes(page) if isinstance(page, bytes | bytearray) else page
    if not isinstance(page, bytes | bytearray):
        html = _need("ftfy").fix_encoding(html)
    # lxml refuses str input that declares an encoding in an XML prolog
    html = re.sub(r"^\s*<\?xml[^>]*\?>", "", html)
    result = get_extractor(extractor).extract(html, url)
    if not result.text.strip():
        raise InputError(f"no main text found in the page ({get_extractor(extractor).name})")
    return Extracted(_main_title(result.title), result.text)


# "标题_新浪新闻", "站名网--标题", "标题 - 站名 | 频道": sites append their name.
_HAN = re.compile("[\u4e00-\u9fff]")
_TITLE_PARTS = re.compile(r"\s*(?:_|\||｜|--|——|\s[-–—]\s)\s*")


def _main_title(title: str | None) -> str | None:
    """The headline without the site name that pages put around it: the
    part between title separators with the most Chinese characters."""
    if not title:
        return None
    parts = [p for p in _TITLE_PARTS.split(title.strip()) if p]
    return max(parts, key=lambda p: (len(_HAN.findall(p)), len(p))) if parts else None


# -- files and WARC archives --------------------------------------------------


def read_html_dir(folder: str | Path) -> Iterator[dict[str, Any]]:
    """One item per ``*.html``/``*.htm`` file under ``folder`` (sorted), as bytes:
    decoding happens with the rest of the item's checks. The id is the path
    relative to the folder; the source is its first subfolder, if any."""
    root = Path(folder)
    for path in sorted(p for p in root.rglob("*") if p.suffix.lower() in (".html", ".htm")):
        rel = path.relative_to(root)
        yield {
            "id": rel.as_posix(),
            "html": path.read_bytes(),
            "source": rel.parts[0] if len(rel.parts) > 1 else None,
        }


def read_warc(path: str | Path) -> Iterator[dict[str, Any]]:
    """One item per HTML response record of a WARC (or .warc.gz) file: the
    target URI is the id and url, its host the source, the WARC date seen_at."""
    warcio = _need("warcio.archiveiterator")
    from urllib.parse import urlsplit

    with open(path, "rb") as stream:
        for record in warcio.ArchiveIterator(stream):
            if record.rec_type != "response":
                continue
            content_type = (
                record.http_headers.get_header("Content-Type") if record.http_headers else ""
            )
            if content_type and "html" not in content_type.lower():
                continue
            uri = record.rec_headers.get_header("WARC-Target-URI")
            yield {
                "id": uri,
                "url": uri,
                "source": urlsplit(uri).hostname if uri else None,
                "seen_at": record.rec_headers.get_header("WARC-Date"),
                "html": record.content_stream().read(),
            }
