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

import functools
import html
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

#: Bump when any rule below changes; stored in ``documents.norm_version``.
NORMALIZATION_VERSION = 3  # 2: scraped JS/CSS statements and U+FFFD dropped; 3: object literals

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
_HSPACE = re.compile(r" {2,}")  # runs of spaces to one (a lone space stays as it is)
# Whitespace that touches a CJK character (or CJK punctuation) carries no meaning.
_CJK = "\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
_IS_CJK = re.compile(f"[{_CJK}]")
_ANY_SPACE = re.compile(r"\s+")
# NFKC leaves these alone and they never compose with a neighbour, so only the
# runs between them are normalized (same result as NFKC on the whole text, at
# half the cost on Chinese news; the run takes one character before it along,
# for combining marks).
_NFKC_RUN = re.compile(
    r".?[^\u4e00-\u9fff\u3001\u3002\u300a-\u3011\u201c\u201d\u2018\u2019\u2014\x20-\x7e\n]+"
)


# The commonest characters that NFKC changes (full-width punctuation, special
# spaces, the ellipsis) are first replaced by their NFKC form, which is ASCII:
# replacing a character by its NFKC form leaves the NFKC of the text unchanged,
# and each of them was a run of its own (90 runs a Sina article, 1 left).
_NFKC_ASCII = tuple(
    (ch, unicodedata.normalize("NFKC", ch)) for ch in "，：（）；？！\u2002\xa0\u3000…"
)


def _nfkc_run(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group())


def _nfkc(text: str) -> str:
    for char, ascii_form in _NFKC_ASCII:
        text = text.replace(char, ascii_form)
    # most texts are NFKC already after that (10,837 of sina2018's 11,377), and
    # the check is one C pass; every run of such a text is NFKC too
    if unicodedata.is_normalized("NFKC", text):
        return text
    return _NFKC_RUN.sub(_nfkc_run, text)


def _is_cjk(char: str) -> bool:
    """``_IS_CJK.match(char)`` for one character, without a regex call."""
    return (
        "\u2e80" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef"
    )


def _fold_spaces(text: str) -> str:
    """Drop whitespace that touches a CJK character; fold other runs to one space.

    ``str.split()`` cuts at the same whitespace as ``\\s`` and drops it at both
    ends (the ``strip``); a Python call per run of whitespace cost 3.5x this.
    """
    out: list[str] = []
    last = ""  # the last character so far
    for piece in text.split():
        if last and not (_is_cjk(last) or _is_cjk(piece[0])):
            out.append(" ")
        out.append(piece)
        last = piece[-1]
    return "".join(out)


_HAS_CJK = re.compile("[\u4e00-\u9fff]")

# Lines left by crawlers that scraped inline JavaScript as text (ad loaders
# such as ``(function(){ var adScript = document.createElement('script'); ...``).
# A line must carry no CJK character and look like code to be dropped.
_CODE_LINE = re.compile(
    r"^[^\u4e00-\u9fff]*(?:\bfunction\s*\(|\bvar\s+\w+\s*=|\b(?:document|window)\.\w+"
    r"|\.(?:src|href)\s*=|^\s*[})\]]+\s*[)(;,]*\s*[)(;]*\s*$"
    # CSS rules: ``.tech-con p{margin-bottom:30px}``
    r"|^[\w\s.#:>,*\[\]=\"'-]+\{[^{}]*:[^{}]*\}?\s*$"
    # comments, control flow, method calls ending a statement: ``//...``,
    # ``if(isIOS){``, ``location.replace('...');``, ``<!--``
    r"|^\s*(?://|/\*|\*/|<!--|-->)|\b(?:if|else|for|while|switch|return|try|catch)\b\s*[({]"
    r"|[\w$\]\)]\.\w+\s*\(.*[;{]\s*$|[=(]\s*[^;]*[;{]\s*$"
    # a braced block on one line (CSS rules with trailing comments, ``x: {}``)
    r"|\{[^{}]*\})[^\u4e00-\u9fff]*$"
)
# A statement of code even with Chinese in its strings: ``var title = "标题";``
_CODE_STATEMENT = re.compile(
    r"^\s*(?:(?:var|let|const)\s+[\w$]+\s*=|[\w$]+(?:\.[\w$]+)+\s*\().*[;{]\s*$"
)
# A property of a scraped object literal (a video player's playlist), even with
# Chinese in its string or comment: ``title: '精彩回顾',  //标题``, ``id: 5,``,
# ``trigger: {``; and the braces between such objects: ``}, {``. An unquoted
# value must end in a comma ("比分: 3" is text), the key must be ASCII.
_CODE_PROPERTY = re.compile(
    r"^(?:[\"']?[A-Za-z_$][A-Za-z0-9_$]*[\"']?\s*:\s*"
    r"(?:(?:'[^']*'|\"[^\"]*\")\s*,?|(?:-?\d+(?:\.\d+)?|true|false|null)\s*,|[\[{])\s*(?://.*)?"
    r"|[}\]]+\s*,?\s*[{\[]?|[{\[])$"
)
# U+FFFD: bytes a crawler could not decode; they carry nothing to compare
_REPLACEMENT = re.compile("\ufffd+")

#: Phrases that sites add to copies. Used when the database setting
#: ``noise_patterns`` is left at its default.
DEFAULT_NOISE_PATTERNS: tuple[str, ...] = (
    # title tags such as 【快讯】, 【独家】 at the start of a line
    r"^\s*【[^】\n]{1,8}】",
    # Whole lines only, and short ones (a bounded tail before $): a banner glued
    # to the article text is left alone rather than taking the article with it.
    # "more news: follow ..." and editor footers
    r"^[^\n]{0,20}更多[^\n]{0,30}(?:请关注|敬请关注|请访问|请点击)[^\n]{0,60}$",
    r"^\s*[(（]?\s*(?:责任编辑|编辑|责编)\s*[:：][^\n]{0,30}$",
    # copyright and reprint banners
    r"^[^\n]{0,40}(?:版权所有|版权归[^\n]{0,20}所有|未经[^\n]{0,20}(?:授权|许可)[^\n]{0,10}(?:不得|禁止)转载)[^\n]{0,60}$",
    r"^[^\n]{0,20}(?:本文|文章)?(?:来源|转载自|来自)\s*[:：][^\n]{0,40}$",
    r"^[^\n]{0,30}(?:扫码|扫描二维码|长按二维码)[^\n]{0,40}$",
)
# For each default pattern, strings of which a match holds at least one: a
# text without any of them is left alone without running the pattern (the
# six patterns were a fifth of normalize's time on sina2018).
_NOISE_LITERALS: dict[str, tuple[str, ...]] = dict(
    zip(
        DEFAULT_NOISE_PATTERNS,
        (
            ("【",),
            ("更多",),
            ("编辑", "责编"),
            ("版权", "未经"),
            ("来源", "转载自", "来自"),
            ("扫码", "二维码"),
        ),
        strict=True,
    )
)

#: Noise removal never takes more than this share of a text: past it, the
#: patterns are matching content, not noise, and the text is kept whole.
MAX_NOISE_SHARE = 0.5


#: Script foldings (OpenCC configurations, extra ``html``): traditional
#: characters to simplified; the Taiwan and Hong Kong variants also convert
#: regional characters (and ``tw2sp`` vocabulary: 軟體 -> 软件).
SCRIPT_FOLDINGS = ("t2s", "tw2s", "tw2sp", "hk2s")


@functools.cache
def _opencc(config: str) -> Any:
    try:
        import opencc
    except ImportError as exc:
        raise NormalizationError(
            "script_folding needs OpenCC: pip install 'pg-text-dedup[html]' (in a checkout: pip install '.[html]')"
        ) from exc
    return opencc.OpenCC(config)


class NormalizationError(ValueError):
    """The text cannot be normalized (for example: nothing is left of it)."""


@dataclass(frozen=True)
class NormalizeOptions:
    """Per-database normalization switches (stored in ``dedup_settings``).

    lowercase: fold case before fingerprinting (off by default: Chinese text has
        no case and product codes sometimes do).
    noise_patterns: regular expressions (multiline mode) removed before
        fingerprinting; the stored document keeps its original text.
    script_folding: an OpenCC conversion (see :data:`SCRIPT_FOLDINGS`) applied
        before fingerprinting, so a traditional-character repost of a
        simplified story fingerprints alike (off by default: it costs time and
        changes fingerprints).
    """

    lowercase: bool = False
    noise_patterns: tuple[str, ...] = DEFAULT_NOISE_PATTERNS
    script_folding: str | None = None
    _compiled: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.script_folding is not None and self.script_folding not in SCRIPT_FOLDINGS:
            raise ValueError(
                f"script_folding {self.script_folding!r} is not one of: null, "
                + ", ".join(f'"{name}"' for name in SCRIPT_FOLDINGS)
            )
        compiled = []
        for pattern in self.noise_patterns:
            try:
                compiled.append((re.compile(pattern, re.M), _NOISE_LITERALS.get(pattern, ())))
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
    text = _nfkc(text)
    # every character of the three classes is non-printable (Cc, Cf, Zs, Zl,
    # Zp), so a text printable but for its line ends has none of them: one C
    # pass instead of three regex scans (1,995 of 2,000 sina2018 bodies)
    if not text.replace("\n", "").isprintable():
        text = _INVISIBLE.sub("", text)
        text = _SPACES.sub(" ", text)
        text = _CONTROL.sub("", text)
    if "  " in text:
        text = _HSPACE.sub(" ", text)
    lines = []
    for line in text.split("\n"):
        line = line.strip()
        # a whole statement or object property is code even with CJK in it;
        # otherwise only a line without CJK characters can be
        if _CODE_STATEMENT.match(line) or _CODE_PROPERTY.match(line):
            continue
        if "\ufffd" in line:
            line = _REPLACEMENT.sub("", line).strip()
        if line and (_HAS_CJK.search(line) or not _CODE_LINE.match(line)):
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
    if options.script_folding:
        text = _opencc(options.script_folding).convert(text)
    stripped = text
    for pattern, literals in options._compiled:
        if not literals or any(literal in stripped for literal in literals):
            stripped = pattern.sub("", stripped)
    if len(stripped) >= (1 - MAX_NOISE_SHARE) * len(text):
        text = stripped
    text = "\n".join(line.strip() for line in text.split("\n") if line.strip())
    key = _fold_spaces(text)
    if not key:
        raise NormalizationError("text is empty after normalization")
    return Normalized(text=text, key=key)
