"""float32 matrix products for NVIDIA GPUs with workgroup tiles chosen by funcgrad.

IREE 3.13 compiles a float32 matmul for CUDA with its SIMT TileAndFuse pipeline and
128x64 output tiles per workgroup (16x8 threads, 8x8 results each).  A 128x512 result is
then 8 workgroups on a GPU of 132 SMs, and a large product reaches 3-4 TFLOP/s.  Measured
on an H100 (``benchmarks/RESULTS.md``, eighth session), one product per module, against
IREE's own choice:

    shape (MxKxN)      IREE's tiles   32x32 tiles, 4x4 per thread, K in steps of 8
    128x784x512        0.149 ms       0.121 ms (16x32 tiles: 0.105 ms)
    128x512x512        0.188 ms       0.084 ms
    512x128x512        0.090 ms       0.064 ms
    1024^3             1.151 ms       0.440 ms
    4096^3             45.0 ms        15.1 ms (9.1 TFLOP/s)

(Those were ``linalg.matmul`` modules compiled for sm_80.)  So a 2-D float32
``dot_general`` lowered for CUDA becomes a ``linalg.generic`` carrying that
``compilation_info``: output tiles of 32 (or 16, or 8, whichever divides the axis) on
each side, 8x8 threads, the contracted axis in steps of 8; a transposed operand is read
through its indexing map.  Through ``fg.jit`` on the H100 (sm_90): GEMM 4096^3 35.3 ->
5.5 ms (25 TFLOP/s, cuBLAS 47), 1024^3 0.76 -> 0.35 ms, the MLP training step 1.24 ->
0.85 ms.  Batched products (``vmap``) get the same tiles with each batch axis tiled by
one.  Other products (integer, several contracted axes, axes no tile divides, a contracted
axis not a multiple of 8) keep ``stablehlo.dot_general`` and IREE's tiles.
"""

from __future__ import annotations

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray

_THREADS_PER_SIDE = 8  # a workgroup is 8x8 threads, two warps
_K_STEP = 8


def _tile(extent: int) -> int | None:
    """The output tile along an axis of ``extent``: the largest of 32/16/8 dividing it."""
    return next((t for t in (32, 16, 8) if extent % t == 0), None)


def tiled_matmul(ctx, args, in_avals, out_aval, lhs_contract, rhs_contract,
                 lhs_batch=(), rhs_batch=()):
    """The product as a tiled ``linalg.generic``, or None where it does not apply.

    One contracted axis and one free axis per operand, after any batch axes (which the
    result leads with, each tiled by one)."""
    lhs_aval, rhs_aval = in_avals
    nb = len(lhs_batch)
    if (ctx.platform != "cuda" or lhs_aval.ndim != nb + 2 or rhs_aval.ndim != nb + 2
            or len(lhs_contract) != 1
            or not lhs_aval.dtype == rhs_aval.dtype == out_aval.dtype == dtypes.float32):
        return None
    batch = [f"b{i}" for i in range(nb)]

    def operand_map(aval, contract, batch_axes, free_name):
        names = []
        for axis in range(aval.ndim):
            if axis in batch_axes:
                names.append(batch[batch_axes.index(axis)])
            else:
                names.append("k" if axis == contract[0] else free_name)
        return names

    lhs_names = operand_map(lhs_aval, lhs_contract, tuple(lhs_batch), "m")
    rhs_names = operand_map(rhs_aval, rhs_contract, tuple(rhs_batch), "n")
    m = lhs_aval.shape[lhs_names.index("m")]
    n = rhs_aval.shape[rhs_names.index("n")]
    k = lhs_aval.shape[lhs_contract[0]]
    tile_m, tile_n = _tile(m), _tile(n)
    if tile_m is None or tile_n is None or k % _K_STEP or 0 in (m, n, k):
        return None
    out = ShapedArray(tuple(out_aval.shape), dtypes.float32)
    loops = ", ".join([*batch, "m", "n", "k"])
    ones, zeros = [1] * nb, [0] * nb
    per_thread = [tile_m // _THREADS_PER_SIDE, tile_n // _THREADS_PER_SIDE]

    def listed(values):
        return ", ".join(str(v) for v in values)

    attrs = {
        "indexing_maps": ctx.attr(
            f"[affine_map<({loops}) -> ({', '.join(lhs_names)})>, "
            f"affine_map<({loops}) -> ({', '.join(rhs_names)})>, "
            f"affine_map<({loops}) -> ({', '.join([*batch, 'm', 'n'])})>]"),
        "iterator_types": ctx.attr(
            "[" + ", ".join(["#linalg.iterator_type<parallel>"] * (nb + 2)
                            + ["#linalg.iterator_type<reduction>"]) + "]"),
        "compilation_info": ctx.attr(
            "#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{"
            f"workgroup = [{listed(ones + [tile_m, tile_n, 0])}], "
            f"thread = [{listed(ones + per_thread + [0])}], "
            f"reduction = [{listed(zeros + [0, 0, _K_STEP])}]}}>, translation_info = "
            "#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
            f"workgroup_size = [{_THREADS_PER_SIDE}, {_THREADS_PER_SIDE}, 1] "
            "subgroup_size = 32>>"),
    }
    return ctx.linalg_multiply_add(args[0], args[1], ctx.linalg_zeros(out), out, attrs)
