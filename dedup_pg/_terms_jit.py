"""The term table's lookups and SimHash's vote as machine code (LLVM,
:mod:`dedup_pg._llvm`).

A text's words (``rjieba.cut``) are counted and looked up in one loop: each
word's 64-bit hash (FNV-1a over its code points, then splitmix64's
finalizer), the distinct words in order of first occurrence with their
counts (a small open-addressing table of the text's own), and each distinct
word's id in the term table's open-addressing index (hash -> id; linear
probing; 0 is an empty slot, a word hashing to 0 takes 1). In Python the same
took a ``Counter`` and a dict lookup a distinct word: ~50 + ~150-300 ns a
word and a term, where the loop takes a few ns a word and one cache miss a
distinct word.

The vote: for each of the 64 bits, the terms' weights added (bit set) or
subtracted (bit clear) in the terms' order, where numpy's matrix product of
the weights and a +-1 matrix of the bits took 23-30 µs a sina2018 text, the loop 16.

A word is known by its hash: two words of one hash (about one chance in
10^8 among 500,000 terms) would share one term's values. The callers
(:class:`dedup_pg.tokenize.TermTable`) keep the words themselves beside the
index, for the term cache file and the name facts.
"""

from __future__ import annotations

import array
import ctypes
import functools

import numpy as np

from ._llvm import INT64 as _N
from ._llvm import POINTER as _P
from ._llvm import address as _address
from ._llvm import compile_ir

_IR = """
; FNV-1a 64 over the code points codes[start .. start+len-1], seeded with the
; length, then splitmix64's finalizer; never 0 (0 marks an empty slot)
define internal i64 @word_hash(ptr nocapture readonly %codes, i64 %start, i64 %len) alwaysinline {
entry:
  %end = add i64 %start, %len
  %h0 = xor i64 %len, u0xCBF29CE484222325
  %empty = icmp sle i64 %len, 0
  br i1 %empty, label %mix, label %char
char:
  %i = phi i64 [%start, %entry], [%i.next, %char]
  %h = phi i64 [%h0, %entry], [%h.next, %char]
  %pc = getelementptr inbounds i32, ptr %codes, i64 %i
  %c32 = load i32, ptr %pc
  %c = zext i32 %c32 to i64
  %hx = xor i64 %h, %c
  %h.next = mul i64 %hx, 1099511628211
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %end
  br i1 %i.done, label %mix, label %char
mix:
  %f = phi i64 [%h0, %entry], [%h.next, %char]
  %s1 = lshr i64 %f, 30
  %x1 = xor i64 %f, %s1
  %y1 = mul i64 %x1, u0xBF58476D1CE4E5B9
  %s2 = lshr i64 %y1, 27
  %x2 = xor i64 %y1, %s2
  %y2 = mul i64 %x2, u0x94D049BB133111EB
  %s3 = lshr i64 %y2, 31
  %x3 = xor i64 %y2, %s3
  %zero = icmp eq i64 %x3, 0
  %key = select i1 %zero, i64 1, i64 %x3
  ret i64 %key
}

; The length of word j, starting at pos: lens[j], or with lens null the
; code points up to the next 0 (a separator the caller put between words)
define internal i64 @word_length(ptr nocapture readonly %codes, ptr readonly %lens, i64 %j,
                                 i64 %pos) alwaysinline {
entry:
  %scan = icmp eq ptr %lens, null
  br i1 %scan, label %char, label %given
given:
  %pl = getelementptr inbounds i32, ptr %lens, i64 %j
  %l32 = load i32, ptr %pl
  %l = sext i32 %l32 to i64
  ret i64 %l
char:
  %i = phi i64 [%pos, %entry], [%i.next, %more]
  %pc = getelementptr inbounds i32, ptr %codes, i64 %i
  %c = load i32, ptr %pc
  %end = icmp eq i32 %c, 0
  br i1 %end, label %done, label %more
more:
  %i.next = add nuw nsw i64 %i, 1
  br label %char
done:
  %len = sub i64 %i, %pos
  ret i64 %len
}

; out[j] = word_hash of word j of n (their code points one after the other in
; codes, their lengths in lens; or with lens null, a 0 after each word)
define void @word_hashes(ptr noalias nocapture readonly %codes, ptr noalias readonly %lens,
                         i64 %n, ptr noalias nocapture writeonly %out) {
entry:
  %none = icmp sle i64 %n, 0
  %scan0 = icmp eq ptr %lens, null
  %step = select i1 %scan0, i64 1, i64 0
  br i1 %none, label %exit, label %word
word:
  %j = phi i64 [0, %entry], [%j.next, %word]
  %pos = phi i64 [0, %entry], [%pos.next, %word]
  %len = call i64 @word_length(ptr %codes, ptr %lens, i64 %j, i64 %pos)
  %key = call i64 @word_hash(ptr %codes, i64 %pos, i64 %len)
  %po = getelementptr inbounds i64, ptr %out, i64 %j
  store i64 %key, ptr %po
  %pos.len = add i64 %pos, %len
  %pos.next = add i64 %pos.len, %step
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %word
exit:
  ret void
}

; The distinct words of n words (codes, lens as above), in order of first
; occurrence: returns their number m and fills, for k < m, out[k] = the
; word's hash, out[n+k] = its id in the index (keys, ids; mask = slots - 1)
; or -1, out[2n+k] = its count, out[3n+k] = the position of its first
; occurrence. seen: 2 * (smask + 1) zeros (key, k a slot), smask + 1 >= 2n.
define i64 @distinct_ids(ptr noalias nocapture readonly %codes, ptr noalias readonly %lens,
                         i64 %n, ptr noalias nocapture readonly %keys, ptr noalias nocapture readonly %ids,
                         i64 %mask, ptr noalias nocapture %seen, i64 %smask,
                         ptr noalias nocapture %out) {
entry:
  %n2 = shl i64 %n, 1
  %n3 = add i64 %n2, %n
  %scan = icmp eq ptr %lens, null
  %step = select i1 %scan, i64 1, i64 0
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %word
word:
  %w = phi i64 [0, %entry], [%w.next, %next]
  %pos = phi i64 [0, %entry], [%pos.next, %next]
  %m = phi i64 [0, %entry], [%m.next, %next]
  %len = call i64 @word_length(ptr %codes, ptr %lens, i64 %w, i64 %pos)
  %key = call i64 @word_hash(ptr %codes, i64 %pos, i64 %len)
  %pos.len = add i64 %pos, %len
  %pos.next = add i64 %pos.len, %step
  br label %seen.probe
seen.probe:                             ; the word among the text's words so far
  %s = phi i64 [%key, %word], [%s.on, %seen.other]
  %sm = and i64 %s, %smask
  %sk2 = shl i64 %sm, 1
  %psk = getelementptr inbounds i64, ptr %seen, i64 %sk2
  %sk = load i64, ptr %psk
  %sfree = icmp eq i64 %sk, 0
  br i1 %sfree, label %first, label %seen.cmp
seen.cmp:
  %same = icmp eq i64 %sk, %key
  br i1 %same, label %again, label %seen.other
seen.other:
  %s.on = add i64 %sm, 1
  br label %seen.probe
again:                                  ; counted once more
  %psl = getelementptr inbounds i64, ptr %psk, i64 1
  %slot = load i64, ptr %psl
  %ci = add i64 %n2, %slot
  %pc = getelementptr inbounds i64, ptr %out, i64 %ci
  %count = load i64, ptr %pc
  %count1 = add i64 %count, 1
  store i64 %count1, ptr %pc
  br label %next
first:                                  ; a new distinct word: k = m
  store i64 %key, ptr %psk
  %psl1 = getelementptr inbounds i64, ptr %psk, i64 1
  store i64 %m, ptr %psl1
  %ph = getelementptr inbounds i64, ptr %out, i64 %m
  store i64 %key, ptr %ph
  %ci1 = add i64 %n2, %m
  %pc1 = getelementptr inbounds i64, ptr %out, i64 %ci1
  store i64 1, ptr %pc1
  %fi = add i64 %n3, %m
  %pf = getelementptr inbounds i64, ptr %out, i64 %fi
  store i64 %w, ptr %pf
  br label %probe
probe:                                  ; its id in the index
  %t = phi i64 [%key, %first], [%t.on, %probe.other]
  %tm = and i64 %t, %mask
  %pk = getelementptr inbounds i64, ptr %keys, i64 %tm
  %k = load i64, ptr %pk
  %hit = icmp eq i64 %k, %key
  br i1 %hit, label %found, label %probe.free
probe.free:
  %free = icmp eq i64 %k, 0
  br i1 %free, label %store.id, label %probe.other
probe.other:
  %t.on = add i64 %tm, 1
  br label %probe
found:
  %pid = getelementptr inbounds i32, ptr %ids, i64 %tm
  %id32 = load i32, ptr %pid
  %idf = sext i32 %id32 to i64
  br label %store.id
store.id:
  %id = phi i64 [-1, %probe.free], [%idf, %found]
  %ii = add i64 %n, %m
  %pi = getelementptr inbounds i64, ptr %out, i64 %ii
  store i64 %id, ptr %pi
  %m1 = add i64 %m, 1
  br label %next
next:
  %m.next = phi i64 [%m, %again], [%m1, %store.id]
  %w.next = add nuw nsw i64 %w, 1
  %w.done = icmp eq i64 %w.next, %n
  br i1 %w.done, label %exit, label %word
exit:
  %result = phi i64 [0, %entry], [%m.next, %next]
  ret i64 %result
}

; votes[i] = the sum over terms j < n of weights[j] if bit i of hashes[j] is
; set, else -weights[j] (i < 64), added in order of j: SimHash's vote
define void @simhash_votes(ptr noalias nocapture readonly %hashes, ptr noalias nocapture readonly %weights,
                           i64 %n, ptr noalias nocapture %votes) {
entry:
  br label %zero
zero:
  %z = phi i64 [0, %entry], [%z.next, %zero]
  %pz = getelementptr inbounds double, ptr %votes, i64 %z
  store double 0.0, ptr %pz
  %z.next = add nuw nsw i64 %z, 1
  %z.done = icmp eq i64 %z.next, 64
  br i1 %z.done, label %start, label %zero
start:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %term
term:                                   ; for j in 0 .. n-1
  %j = phi i64 [0, %start], [%j.next, %next]
  %ph = getelementptr inbounds i64, ptr %hashes, i64 %j
  %h = load i64, ptr %ph
  %pw = getelementptr inbounds double, ptr %weights, i64 %j
  %w = load double, ptr %pw
  %nw = fneg double %w
  br label %bit
bit:                                    ; for i in 0 .. 63
  %i = phi i64 [0, %term], [%i.next, %bit]
  %sh = lshr i64 %h, %i
  %b = and i64 %sh, 1
  %set = icmp ne i64 %b, 0
  %v = select i1 %set, double %w, double %nw
  %pv = getelementptr inbounds double, ptr %votes, i64 %i
  %old = load double, ptr %pv
  %new = fadd double %old, %v
  store double %new, ptr %pv
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, 64
  br i1 %i.done, label %next, label %bit
next:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %term
exit:
  ret void
}

; Put n (hash, id) pairs into the index (keys, ids; mask = slots - 1): each
; in the first empty slot from hash & mask on. The hashes are not in it yet.
define void @insert(ptr noalias nocapture %keys, ptr noalias nocapture %ids, i64 %mask,
                    ptr noalias nocapture readonly %new.keys, ptr noalias nocapture readonly %new.ids,
                    i64 %n) {
entry:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %item
item:
  %j = phi i64 [0, %entry], [%j.next, %put]
  %pnk = getelementptr inbounds i64, ptr %new.keys, i64 %j
  %key = load i64, ptr %pnk
  br label %probe
probe:
  %t = phi i64 [%key, %item], [%t.on, %probe.other]
  %tm = and i64 %t, %mask
  %pk = getelementptr inbounds i64, ptr %keys, i64 %tm
  %k = load i64, ptr %pk
  %free = icmp eq i64 %k, 0
  br i1 %free, label %put, label %probe.other
probe.other:
  %t.on = add i64 %tm, 1
  br label %probe
put:
  %pni = getelementptr inbounds i32, ptr %new.ids, i64 %j
  %nid = load i32, ptr %pni
  %pid = getelementptr inbounds i32, ptr %ids, i64 %tm
  store i32 %nid, ptr %pid
  store i64 %key, ptr %pk
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %item
exit:
  ret void
}
"""

# PYFUNCTYPE: called with the GIL held, so a lookup never runs while another
# thread's insert writes the same index (both are a few microseconds)
_WORD_HASHES = ctypes.PYFUNCTYPE(None, ctypes.c_char_p, _P, _N, _P)
_DISTINCT_IDS = ctypes.PYFUNCTYPE(_N, ctypes.c_char_p, _P, _N, _P, _P, _N, _P, _N, _P)
_INSERT = ctypes.PYFUNCTYPE(None, _P, _P, _N, _P, _P, _N)
_SIMHASH_VOTES = ctypes.CFUNCTYPE(None, _P, _P, _N, _P)


def _lens_address(lens: array.array | None) -> int | None:
    return None if lens is None else lens.buffer_info()[0]


def _slots(count: int, least: int) -> int:
    """The open-addressing slots for ``count`` keys, at most half full: a
    power of two, at least ``least``."""
    slots = least
    while slots < 2 * count:
        slots *= 2
    return slots


class Index:
    """An open-addressing index from word hash to term id: ``keys`` (uint64,
    0 empty) and ``ids`` (int32), a power of two of slots, at most half full."""

    def __init__(self, slots: int) -> None:
        self.keys = np.zeros(slots, dtype=np.uint64)
        self.ids = np.zeros(slots, dtype=np.int32)
        self.mask = slots - 1
        self.addresses = (_address(self.keys), _address(self.ids))

    @classmethod
    def holding(cls, count: int) -> Index:
        """An empty index with room for ``count`` terms at most half full."""
        return cls(_slots(count, 1024))

    def room_for(self, count: int) -> bool:
        return 2 * count <= self.mask + 1

    def copy(self, count: int, kernels: TermKernels) -> Index:
        """A new index holding this one's entries, with room for ``count``."""
        other = Index.holding(max(count, (self.mask + 1) // 2))
        used = np.flatnonzero(self.keys)
        if len(used):
            kernels.insert(other, self.keys[used], self.ids[used])
        return other


class TermKernels:
    """The compiled loops, as functions of words and :class:`Index` es."""

    def __init__(self, cpu: tuple[str, str] | None = None) -> None:
        self._engine = compile_ir(_IR, cpu)
        address = self._engine.get_function_address
        self._word_hashes = _WORD_HASHES(address("word_hashes"))
        self._distinct_ids = _DISTINCT_IDS(address("distinct_ids"))
        self._insert = _INSERT(address("insert"))
        self._simhash_votes = _SIMHASH_VOTES(address("simhash_votes"))

    @staticmethod
    def _words(words: list[str]) -> tuple[bytes, array.array | None]:
        """The words' code points (UTF-32; a lone surrogate as itself), a 0
        after each, and no lengths; where a word holds a NUL character (not
        in a text normalize() made, nor in rjieba's words), one after the
        other and their lengths (counting the lengths costs about what
        counting the words in a ``Counter`` does)."""
        joined = "\x00".join(words)
        if joined.count("\x00") == len(words) - 1:
            return (joined + "\x00").encode("utf-32-le", "surrogatepass"), None
        codes = "".join(words).encode("utf-32-le", "surrogatepass")
        return codes, array.array("i", map(len, words))

    def word_hashes(self, words: list[str]) -> np.ndarray:
        """The hash of each word (uint64)."""
        codes, lens = self._words(words)
        out = np.empty(len(words), dtype=np.uint64)
        if len(words):
            self._word_hashes(codes, _lens_address(lens), len(words), _address(out))
        return out

    def distinct_ids(
        self, words: list[str], index: Index
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The distinct ``words`` in order of first occurrence: (their
        hashes (uint64), their ids in ``index`` (-1: not in it), their counts,
        the position of each one's first occurrence), int64 but the hashes."""
        n = len(words)
        codes, lens = self._words(words)
        slots = _slots(n, 64)
        seen = np.zeros(2 * slots, dtype=np.uint64)
        out = np.empty(4 * n, dtype=np.int64)
        keys, ids = index.addresses
        m = self._distinct_ids(
            codes,
            _lens_address(lens),
            n,
            keys,
            ids,
            index.mask,
            _address(seen),
            slots - 1,
            _address(out),
        )
        table = out.reshape(4, n)[:, :m]
        return table[0].view(np.uint64), table[1], table[2], table[3]

    def insert(self, index: Index, hashes: np.ndarray, ids: np.ndarray) -> None:
        """Put (hash, id) pairs into ``index``, which must not hold the
        hashes yet and must have room for them (:meth:`Index.room_for`)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        ids = np.ascontiguousarray(ids, dtype=np.int32)
        keys, slots = index.addresses
        self._insert(keys, slots, index.mask, _address(hashes), _address(ids), len(hashes))

    def simhash_votes(self, hashes: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """SimHash's 64 votes (float64): for bit i, the sum of the weights of
        the terms whose hash has bit i set less those of the others, added
        in the terms' order (:func:`dedup_pg.simhash.simhash_arrays` reads
        their signs)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        votes = np.empty(64, dtype=np.float64)
        self._simhash_votes(_address(hashes), _address(weights), len(hashes), _address(votes))
        return votes


@functools.cache
def kernels() -> TermKernels:
    """The process's compiled term loops (~0.05 s to compile, once)."""
    return TermKernels()
