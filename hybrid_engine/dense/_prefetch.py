"""Software prefetch for the numba kernels: ask the CPU to start loading a cache line (or every
line of a row) before it is read, so that the loads of several rows overlap, as hnswlib does
for its graph walk. A prefetch never faults and changes no result."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
    """LLVM ``prefetch`` (read, high locality) of ``array[index]``'s cache line."""
    array_type = signature.args[0]
    array = context.make_array(array_type)(context, builder, args[0])
    pointer = cgutils.get_item_pointer(context, builder, array_type, array, [args[1]])
    byte_pointer = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    function = cgutils.get_or_insert_function(
        builder.module,
        ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]),
        "llvm.prefetch.p0i8",
    )
    builder.call(function, [builder.bitcast(pointer, byte_pointer), i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


if numba.config.DISABLE_JIT:

    def prefetch(array: np.ndarray, index: int) -> None:
        """Nothing to do without the JIT (see the compiled version)."""

else:

    @intrinsic
    def prefetch(typingctx, array, index):
        """Ask the CPU to start loading ``array[index]`` (no bounds check needed: a prefetch
        never faults). As hnswlib does, it hides the memory latency of a graph walk."""
        return types.void(array, index), _codegen


@numba.njit(cache=True, nogil=True, inline="always")
def prefetch_row(row):
    """Ask for every cache line of the contiguous ``row``: the CPU's own prefetcher fetches a
    line or two, and the 384 bytes of an int8 code span six or seven (all of them: 0.89 ->
    0.49 ms a walk of list 256 on the 254k int8 graph, docs/memory.md)."""
    step = max(1, 64 // row.itemsize)
    for i in range(0, row.shape[0], step):
        prefetch(row, i)
    prefetch(row, row.shape[0] - 1)  # a row that starts inside a line ends in one more
