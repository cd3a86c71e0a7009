"""MinHash's two loops as machine code: LLVM (:mod:`dedup_pg._llvm`) compiles them
for this CPU when :mod:`dedup_pg.minhash` first asks for them.

numpy computes the 128 x n products, sums and minimums in three passes of
scalar 64-bit arithmetic (numpy has no vector loop for uint64 multiplication),
and the 5-gram hashes in eleven passes; one fused loop each, vectorized by
LLVM, gives the same values in a tenth of the time. The loops are written in
LLVM's own language below, ~50 lines, and compiled in ~0.03-0.05 s (llvmlite's
import ~0.04 s more, once a process). numba compiled the same loops from Python until this
module was rewritten: it gave the same machine code, and loading it cost a
process ~0.5-0.8 s of CPU (its import, scipy's BLAS check, its type registries
and its on-disk cache), about 1 s more where that cache was not yet written.

The functions take numpy arrays (C-contiguous, of the dtypes named) and are
called through ctypes, which releases the GIL for the call (a thread's
signature does not hold up another thread).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ._llvm import INT64, POINTER, address, compile_ir

# ``{shingle}``, ``{prime}`` and ``{perms}`` are filled in by :class:`Kernels`;
# LLVM then unrolls the 5-gram loop and vectorizes the permutations' loop.
_IR = """
declare i64 @llvm.umin.i64(i64, i64)

; out[j] = the hash of the {shingle}-gram of code points chars[j ..], j < n:
; h = ((c0 * prime + c1) * prime + ...), then splitmix64's finalizer
define void @shingle_values(ptr noalias nocapture readonly %chars, i64 %n,
                            ptr noalias nocapture writeonly %out) {{
entry:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %gram
gram:                                   ; for j in 0 .. n-1
  %j = phi i64 [0, %entry], [%j.next, %mix]
  %p0 = getelementptr inbounds i32, ptr %chars, i64 %j
  %c0 = load i32, ptr %p0
  %h0 = zext i32 %c0 to i64
  br label %poly
poly:                                   ; for k in 1 .. shingle-1
  %k = phi i64 [1, %gram], [%k.next, %poly]
  %h = phi i64 [%h0, %gram], [%h.next, %poly]
  %pk = getelementptr inbounds i32, ptr %p0, i64 %k
  %ck = load i32, ptr %pk
  %dk = zext i32 %ck to i64
  %hp = mul i64 %h, {prime}
  %h.next = add i64 %hp, %dk
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, {shingle}
  br i1 %k.done, label %mix, label %poly
mix:
  %s1 = lshr i64 %h.next, 30
  %x1 = xor i64 %h.next, %s1
  %y1 = mul i64 %x1, u0xBF58476D1CE4E5B9
  %s2 = lshr i64 %y1, 27
  %x2 = xor i64 %y1, %s2
  %y2 = mul i64 %x2, u0x94D049BB133111EB
  %s3 = lshr i64 %y2, 31
  %x3 = xor i64 %y2, %s3
  %pj = getelementptr inbounds i64, ptr %out, i64 %j
  store i64 %x3, ptr %pj
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %gram
exit:
  ret void
}}

; out[i] = min over hashes[0 .. n-1] of (a[i] * h + b[i]) mod 2**64, i < perms
define void @minimums(ptr noalias nocapture readonly %hashes, i64 %n,
                      ptr noalias nocapture readonly %a, ptr noalias nocapture readonly %b,
                      ptr noalias nocapture %out) {{
entry:
  br label %fill
fill:                                   ; out[i] = 2**64 - 1
  %f = phi i64 [0, %entry], [%f.next, %fill]
  %pf = getelementptr inbounds i64, ptr %out, i64 %f
  store i64 -1, ptr %pf
  %f.next = add nuw nsw i64 %f, 1
  %f.done = icmp eq i64 %f.next, {perms}
  br i1 %f.done, label %start, label %fill
start:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %hash
hash:                                   ; for j in 0 .. n-1
  %j = phi i64 [0, %start], [%j.next, %next]
  %pj = getelementptr inbounds i64, ptr %hashes, i64 %j
  %x = load i64, ptr %pj
  br label %perm
perm:                                   ; for i in 0 .. perms-1
  %i = phi i64 [0, %hash], [%i.next, %perm]
  %pa = getelementptr inbounds i64, ptr %a, i64 %i
  %pb = getelementptr inbounds i64, ptr %b, i64 %i
  %po = getelementptr inbounds i64, ptr %out, i64 %i
  %ai = load i64, ptr %pa
  %bi = load i64, ptr %pb
  %oi = load i64, ptr %po
  %ax = mul i64 %ai, %x
  %v = add i64 %ax, %bi
  %m = call i64 @llvm.umin.i64(i64 %oi, i64 %v)
  store i64 %m, ptr %po
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, {perms}
  br i1 %i.done, label %next, label %perm
next:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %hash
exit:
  ret void
}}
"""

_SHINGLE_VALUES = ctypes.CFUNCTYPE(None, POINTER, INT64, POINTER)
_MINIMUMS = ctypes.CFUNCTYPE(None, POINTER, INT64, POINTER, POINTER, POINTER)


class Kernels:
    """The compiled loops for one 5-gram size, prime and permutation count
    (its ``a`` and ``b``), as functions of numpy arrays. Holds LLVM's
    execution engine: the machine code lives as long as it does."""

    def __init__(
        self,
        shingle: int,
        prime: int,
        a: np.ndarray,
        b: np.ndarray,
        cpu: tuple[str, str] | None = None,
    ) -> None:
        self.shingle = shingle
        self.a = np.ascontiguousarray(a, dtype=np.uint64)
        self.b = np.ascontiguousarray(b, dtype=np.uint64)
        ir = _IR.format(shingle=shingle, prime=prime, perms=len(self.a))
        self._engine = compile_ir(ir, cpu)
        self._shingle_values = _SHINGLE_VALUES(self._engine.get_function_address("shingle_values"))
        self._minimums = _MINIMUMS(self._engine.get_function_address("minimums"))
        self._permutations = (address(self.a), address(self.b))

    def shingle_values(self, chars: np.ndarray) -> np.ndarray:
        """The hash of each 5-gram of the code points ``chars`` (uint32;
        repeats kept): ``minhash._shingle_values_numpy``'s values."""
        chars = np.ascontiguousarray(chars, dtype=np.uint32)
        out = np.empty(max(len(chars) - self.shingle + 1, 0), dtype=np.uint64)
        if len(out):
            self._shingle_values(address(chars), len(out), address(out))
        return out

    def minimums(self, hashes: np.ndarray) -> np.ndarray:
        """min over ``hashes`` (uint64) of ``(a[i] * h + b[i]) mod 2**64`` for
        each permutation i: ``minhash._minimums_numpy``'s values."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        out = np.empty(len(self.a), dtype=np.uint64)
        self._minimums(address(hashes), len(hashes), *self._permutations, address(out))
        return out
