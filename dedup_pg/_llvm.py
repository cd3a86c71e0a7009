"""Loops compiled to machine code by LLVM, through llvmlite (numba's own backend,
wheels only): the MinHash kernels (:mod:`dedup_pg._minhash_jit`) and the term
table's and SimHash vote's (:mod:`dedup_pg._terms_jit`), each written in LLVM's
own language and compiled for the CPU the process runs on, in a few tens of
milliseconds.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import llvmlite.binding as llvm

#: ctypes' types of a pointer argument and a 64-bit integer one
POINTER, INT64 = ctypes.c_void_p, ctypes.c_int64


def address(arr: np.ndarray) -> int:
    """Where a numpy array's data starts, for a pointer argument."""
    return arr.__array_interface__["data"][0]


def compile_ir(ir: str, cpu: tuple[str, str] | None = None) -> llvm.ExecutionEngine:
    """``ir`` optimized as clang's -O3 would (loops vectorized) and compiled to
    machine code for this CPU, or for ``cpu`` (LLVM's name of a CPU and its
    features, ``("x86-64", "")`` say: the tests compile for CPUs without this
    one's vector instructions)."""
    import llvmlite.binding as llvm  # on the first compile: ~40 ms and ~40 MB

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(ir)
    module.verify()
    name, features = cpu or (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=name, features=features, opt=3
    )
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    passes = llvm.create_pass_builder(machine, tuning)
    passes.getModulePassManager().run(module, passes)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    return engine
