"""Two texts side by side: what differs, at the character level, with paragraphs
that changed place shown as moved rather than as deleted and added.

For the review page (dedup_pg/web). Chinese has no spaces, so a word diff
would diff whole clauses: the comparison is by character. A repost often
shuffles paragraphs (the demo's "repost-reorder"); a plain character diff
shows such a paragraph deleted in one place and added in another, which reads
as a change of content. So paragraphs are paired first (identical ones, then
similar ones, ``PAIR_RATIO``); the pairs that keep their order (the heaviest
increasing run, by length) anchor the two texts, the other pairs are *moved*;
the text between two anchors is compared character by character.

Pure: no I/O. difflib.SequenceMatcher (Ratcliff/Obershelp, "gestalt pattern
matching": Ratcliff & Metzener, Dr. Dobb's Journal, July 1988), with
``autojunk`` off: its heuristic treats characters found in over 1% of a text
longer than 200 as junk, which in Chinese are 的, 了, 在, 。 and so nothing
would match.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from difflib import SequenceMatcher

#: Paragraphs this similar (SequenceMatcher ratio) are the same paragraph,
#: edited: paired, so a moved and edited paragraph is still shown as moved.
PAIR_RATIO = 0.6
#: Above this many character pairs (len(a) * len(b)) a stretch is compared
#: sentence by sentence first and by character only within changed sentences:
#: SequenceMatcher is quadratic in the worst case (two unrelated 20,000-character
#: texts took seconds; two 3,000-character articles take a few ms).
CHAR_CELLS = 4_000_000
#: More paragraphs than this on a side: only identical paragraphs are paired
#: (similar-pairing compares every paragraph with every other).
MAX_PAIRING = 300

_SENTENCE = re.compile(r"[^。！？!?；;\n]*[。！？!?；;\n]?")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    """A run of characters of one side: ``equal`` (in both), ``delete`` (only
    on the left), ``insert`` (only on the right)."""

    kind: str
    text: str


@dataclass
class Paragraph:
    """One paragraph of a side. ``status``: ``same`` (identical, in place),
    ``changed`` (in place, edited), ``moved`` (its partner is elsewhere on the
    other side), ``removed`` / ``added`` (no partner); ``partner`` is the
    partner's number on the other side (1-based), when it has one."""

    number: int
    status: str
    spans: list[Span] = field(default_factory=list)
    partner: int | None = None

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.spans)


@dataclass
class Comparison:
    """Both sides, paragraph by paragraph, and how much of the text is shared."""

    left: list[Paragraph]
    right: list[Paragraph]
    shared_chars: int  # characters in equal spans (counted once)
    left_chars: int
    right_chars: int

    @property
    def moved(self) -> int:
        return sum(p.status == "moved" for p in self.right)

    @property
    def similarity(self) -> float:
        """Shared characters over the longer side's (1.0: identical texts)."""
        longest = max(self.left_chars, self.right_chars)
        return self.shared_chars / longest if longest else 1.0


def paragraphs(text: str) -> list[str]:
    """The text's paragraphs: its lines, stripped, without empty ones."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def compare(left: str, right: str) -> Comparison:
    """``left`` (the matched, earlier document) against ``right`` (the
    incoming text)."""
    a, b = paragraphs(left), paragraphs(right)
    pairs = _pair(a, b)
    anchors = _ordered(pairs, a, b)
    out_a: list[Paragraph | None] = [None] * len(a)
    out_b: list[Paragraph | None] = [None] * len(b)
    shared = 0
    for i, j in pairs:
        sa, sb = _spans(a[i], b[j])
        shared += sum(len(s.text) for s in sa if s.kind == "equal")
        if (i, j) in anchors:
            status = "same" if _fold(a[i]) == _fold(b[j]) else "changed"
        else:
            status = "moved"
        out_a[i] = Paragraph(i + 1, status, sa, j + 1)
        out_b[j] = Paragraph(j + 1, status, sb, i + 1)
    # the stretches between anchors: what is left of them, compared as one text
    bounds = [(-1, -1), *sorted(anchors), (len(a), len(b))]
    paired_a = {i for i, _ in pairs}
    paired_b = {j for _, j in pairs}
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:], strict=False):
        gap_a = [i for i in range(i0 + 1, i1) if i not in paired_a]
        gap_b = [j for j in range(j0 + 1, j1) if j not in paired_b]
        if not gap_a and not gap_b:
            continue
        sa, sb = _spans("\n".join(a[i] for i in gap_a), "\n".join(b[j] for j in gap_b))
        shared += sum(len(s.text) for s in sa if s.kind == "equal")
        if gap_a:
            for index, spans in zip(gap_a, _split_lines(sa), strict=True):
                out_a[index] = Paragraph(index + 1, _gap_status(spans, "removed"), spans)
        if gap_b:
            for index, spans in zip(gap_b, _split_lines(sb), strict=True):
                out_b[index] = Paragraph(index + 1, _gap_status(spans, "added"), spans)
    left_paras = [p for p in out_a if p is not None]
    right_paras = [p for p in out_b if p is not None]
    return Comparison(
        left_paras,
        right_paras,
        shared,
        sum(len(p) for p in a),
        sum(len(p) for p in b),
    )


def _gap_status(spans: list[Span], alone: str) -> str:
    return "changed" if any(s.kind == "equal" and s.text.strip() for s in spans) else alone


def _key(paragraph: str) -> str:
    return _SPACE.sub("", _fold(paragraph))


def _fold(text: str) -> str:
    """Each character as the engine's normalization sees it (NFKC: full-width
    digits and letters are ASCII), kept one for one so that a span of the
    folded text is the same span of the original: a repost that only re-typed
    "２０２６" as "2026" shows no difference."""
    out = []
    for c in text:
        f = unicodedata.normalize("NFKC", c) if ord(c) > 127 else c
        out.append(f if len(f) == 1 else c)
    return "".join(out)


def _pair(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """One-to-one pairs of paragraphs: identical ones (in order of
    appearance), then the most similar ones above PAIR_RATIO."""
    pairs: list[tuple[int, int]] = []
    free_b: dict[str, list[int]] = {}
    for j, p in enumerate(b):
        free_b.setdefault(_key(p), []).append(j)
    left_a: list[int] = []
    for i, p in enumerate(a):
        js = free_b.get(_key(p))
        if js:
            pairs.append((i, js.pop(0)))
        else:
            left_a.append(i)
    left_b = sorted(j for js in free_b.values() for j in js)
    if not left_a or not left_b or len(a) > MAX_PAIRING or len(b) > MAX_PAIRING:
        return pairs
    scored = []
    for i in left_a:
        for j in left_b:
            sm = SequenceMatcher(None, _fold(a[i]), _fold(b[j]), autojunk=False)
            if sm.real_quick_ratio() < PAIR_RATIO or sm.quick_ratio() < PAIR_RATIO:
                continue
            if len(a[i]) * len(b[j]) > CHAR_CELLS:
                continue
            ratio = sm.ratio()
            if ratio >= PAIR_RATIO:
                scored.append((-ratio, i, j))
    used_a: set[int] = set()
    used_b: set[int] = set()
    for _, i, j in sorted(scored):
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            pairs.append((i, j))
    return pairs


def _ordered(pairs: list[tuple[int, int]], a: list[str], b: list[str]) -> set[tuple[int, int]]:
    """The pairs that keep their order on both sides: the increasing run of
    most characters (a long paragraph staying put outweighs two short ones
    that swapped). The rest moved."""
    ps = sorted(pairs, key=lambda p: p[1])
    best: list[int] = []
    prev: list[int] = []
    for k, (i, j) in enumerate(ps):
        weight = len(a[i]) + len(b[j])
        best.append(weight)
        prev.append(-1)
        for m in range(k):
            if ps[m][0] < i and best[m] + weight > best[k]:
                best[k] = best[m] + weight
                prev[k] = m
    if not ps:
        return set()
    k = max(range(len(ps)), key=lambda x: best[x])
    chosen: set[tuple[int, int]] = set()
    while k >= 0:
        chosen.add(ps[k])
        k = prev[k]
    return chosen


def _spans(a: str, b: str) -> tuple[list[Span], list[Span]]:
    """Character diff of two strings: the left's spans and the right's."""
    fa, fb = _fold(a), _fold(b)
    if fa == fb:
        return ([Span("equal", a)] if a else []), ([Span("equal", b)] if b else [])
    left: list[Span] = []
    right: list[Span] = []
    if len(a) * len(b) > CHAR_CELLS:
        # sentence by sentence first; characters only inside changed sentences
        sa, sb = _sentences(a), _sentences(b)
        sm = SequenceMatcher(None, [_fold(x) for x in sa], [_fold(x) for x in sb], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            ta, tb = "".join(sa[i1:i2]), "".join(sb[j1:j2])
            if tag == "equal":
                left.append(Span("equal", ta))
                right.append(Span("equal", tb))
            elif tag == "replace" and len(ta) * len(tb) <= CHAR_CELLS:
                la, lb = _spans(ta, tb)
                left.extend(la)
                right.extend(lb)
            else:
                if ta:
                    left.append(Span("delete", ta))
                if tb:
                    right.append(Span("insert", tb))
        return _merge(left), _merge(right)
    sm = SequenceMatcher(None, fa, fb, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            left.append(Span("equal", a[i1:i2]))
            right.append(Span("equal", b[j1:j2]))
            continue
        if i2 > i1:
            left.append(Span("delete", a[i1:i2]))
        if j2 > j1:
            right.append(Span("insert", b[j1:j2]))
    return _merge(_absorb(left)), _merge(_absorb(right))


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.findall(text) if s]


def _absorb(spans: list[Span]) -> list[Span]:
    """A lone equal character between two changes (a shared 的 or ，) is shown
    as changed: it is chance, and breaking a changed run at it is noise."""
    out = list(spans)
    for k in range(1, len(out) - 1):
        s = out[k]
        if (
            s.kind == "equal"
            and len(s.text) == 1
            and out[k - 1].kind != "equal"
            and out[k + 1].kind != "equal"
        ):
            out[k] = Span(out[k - 1].kind, s.text)
    return out


def _merge(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for s in spans:
        if not s.text:
            continue
        if out and out[-1].kind == s.kind:
            out[-1] = Span(s.kind, out[-1].text + s.text)
        else:
            out.append(s)
    return out


def _split_lines(spans: list[Span]) -> list[list[Span]]:
    """Spans of a "\\n"-joined stretch, back into one list per paragraph."""
    lines: list[list[Span]] = [[]]
    for s in spans:
        parts = s.text.split("\n")
        for k, part in enumerate(parts):
            if k:
                lines.append([])
            if part:
                lines[-1].append(Span(s.kind, part))
    return lines
