"""Text normalization: the rules that decide which texts count as "the same".

Every rule here changes fingerprints, so the rules carry a version
(:data:`NORMALIZATION_VERSION`) that is stored with each document. Bump it
whenever a rule changes; documents fingerprinted under an older version can then
be found and re-fingerprinted.

Two forms come out of :func:`normalize`:

* ``text``: the cleaned text, paragraphs kept one per line. Tokenization and
  SimHash work on it.
* ``key``: the form that is hashed for the exact layer: whitespace next to CJK
  characters removed and other runs of whitespace folded to one space, so
  re-paragraphed or re-indented copies hash alike.

Chinese punctuation is kept (NFKC folds full-width ``，`` to ``,`` but keeps
``。``): stripping punctuation wholesale makes different texts collide.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field

#: Bump when any rule below changes; stored in ``documents.norm_version``.
NORMALIZATION_VERSION = 1

# Zero-width characters, bidi marks, soft hyphen and BOM: invisible, and common
# in copied web text. Removed outright.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
# Spaces that NFKC leaves alone or that crawlers produce (already folded by NFKC:
# \u3000 and \xa0; listed for clarity where they survive other paths).
_SPACES = re.compile("[\t\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\x0b\x0c]")
# C0/C1 control characters except newline (tabs were turned into spaces above).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_HTML_HINT = re.compile(r"<[a-zA-Z!/]|&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]{2,8});")
_HTML_DROP = re.compile(
    r"<(script|style|noscript|template)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.S | re.I
)
_HTML_BLOCK = re.compile(
    r"<\s*(?:br|/?p|/?div|/?li|/?tr|/?h[1-6]|/?section|/?article|/?blockquote)\b[^>]*>",
    re.I,
)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>|<!\w[^<>]*>")
_HSPACE = re.compile(r"[ ]+")
# Whitespace that touches a CJK character (or CJK punctuation) carries no meaning.
_CJK = "\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
_CJK_SPACE = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")
_ANY_SPACE = re.compile(r"\s+")

# Lines left by crawlers that scraped inline JavaScript as text (ad loaders
# such as ``(function(){ var adScript = document.createElement('script'); ...``).
# A line must carry no CJK character and look like code to be dropped.
_CODE_LINE = re.compile(
    r"^[^\u4e00-\u9fff]*(?:\bfunction\s*\(|\bvar\s+\w+\s*=|\b(?:document|window)\.\w+"
    r"|\.(?:src|href)\s*=|^\s*[})\]]+\s*[)(;,]*\s*[)(;]*\s*$"
    # CSS rules: ``.tech-con p{margin-bottom:30px}``
    r"|^[\w\s.#:>,*\[\]=\"'-]+\{[^{}]*:[^{}]*\}?\s*$)[^\u4e00-\u9fff]*$"
)

#: Phrases that sites add to copies. Used when the database setting
#: ``noise_patterns`` is left at its default.
DEFAULT_NOISE_PATTERNS: tuple[str, ...] = (
    # title tags such as 【快讯】, 【独家】 at the start of a line
    r"^\s*【[^】\n]{1,8}】",
    # "more news: follow ..." and "source/editor" footers (whole line)
    r"^.{0,20}更多.{0,30}(?:请关注|敬请关注|请访问|请点击).*$",
    r"^\s*[(（]?\s*(?:责任编辑|编辑|责编)\s*[:：].{0,30}$",
    # copyright and reprint banners (whole line)
    r"^.{0,40}(?:版权所有|版权归.{0,20}所有|未经.{0,20}(?:授权|许可).{0,10}(?:不得|禁止)转载).*$",
    r"^.{0,20}(?:本文|文章)?(?:来源|转载自|来自)\s*[:：].{0,40}$",
    r"^.{0,30}(?:扫码|扫描二维码|长按二维码).{0,40}$",
)


class NormalizationError(ValueError):
    """The text cannot be normalized (for example: nothing is left of it)."""


@dataclass(frozen=True)
class NormalizeOptions:
    """Per-database normalization switches (stored in ``dedup_settings``).

    lowercase: fold case before fingerprinting (off by default: Chinese text has
        no case and product codes sometimes do).
    noise_patterns: regular expressions (multiline mode) removed before
        fingerprinting; the stored document keeps its original text.
    """

    lowercase: bool = False
    noise_patterns: tuple[str, ...] = DEFAULT_NOISE_PATTERNS
    _compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = []
        for pattern in self.noise_patterns:
            try:
                compiled.append(re.compile(pattern, re.M))
            except re.error as exc:
                raise ValueError(f"noise pattern {pattern!r} is not a valid regex: {exc}") from exc
        object.__setattr__(self, "_compiled", tuple(compiled))


@dataclass(frozen=True)
class Normalized:
    text: str
    key: str


def clean(raw: str) -> str:
    """Apply the character-level rules and return the text one paragraph a line."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    if _HTML_HINT.search(text):
        text = _HTML_DROP.sub(" ", text)
        text = _HTML_BLOCK.sub("\n", text)
        text = _HTML_TAG.sub(" ", text)
        text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE.sub("", text)
    text = _SPACES.sub(" ", text)
    text = _CONTROL.sub("", text)
    lines = []
    for line in text.split("\n"):
        line = _HSPACE.sub(" ", line).strip()
        if line and not _CODE_LINE.match(line):
            lines.append(line)
    return "\n".join(lines)


def normalize(raw: str, options: NormalizeOptions | None = None) -> Normalized:
    """Normalize ``raw`` and derive its fingerprint key.

    Raises :class:`NormalizationError` when nothing is left (empty,
    whitespace-only or markup-only input).
    """
    options = options or NormalizeOptions()
    text = clean(raw)
    if options.lowercase:
        text = text.lower()
    for pattern in options._compiled:
        text = pattern.sub("", text)
    text = "\n".join(line.strip() for line in text.split("\n") if line.strip())
    key = _ANY_SPACE.sub(" ", _CJK_SPACE.sub("", text)).strip()
    if not key:
        raise NormalizationError("text is empty after normalization")
    return Normalized(text=text, key=key)
