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
0.85 ms.  Other products (batched, integer, axes no tile divides, a contracted axis not
a multiple of 8) keep ``stablehlo.dot_general`` and IREE's tiles.
"""

from __future__ import annotations

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray

_THREADS_PER_SIDE = 8  # a workgroup is 8x8 threads, two warps
_K_STEP = 8


def _tile(extent: int) -> int | None:
    """The output tile along an axis of ``extent``: the largest of 32/16/8 dividing it."""
    return next((t for t in (32, 16, 8) if extent % t == 0), None)


def tiled_matmul(ctx, args, in_avals, out_aval, lhs_contract, rhs_contract):
    """The product as a tiled ``linalg.generic``, or None where it does not apply."""
    lhs_aval, rhs_aval = in_avals
    if (ctx.platform != "cuda" or lhs_aval.ndim != 2 or rhs_aval.ndim != 2
            or len(lhs_contract) != 1
            or not lhs_aval.dtype == rhs_aval.dtype == out_aval.dtype == dtypes.float32):
        return None
    lc, rc = lhs_contract[0], rhs_contract[0]
    m, n, k = lhs_aval.shape[1 - lc], rhs_aval.shape[1 - rc], lhs_aval.shape[lc]
    tile_m, tile_n = _tile(m), _tile(n)
    if tile_m is None or tile_n is None or k % _K_STEP:
        return None
    out = ShapedArray((m, n), dtypes.float32)
    lhs_map = "(m, k)" if lc == 1 else "(k, m)"
    rhs_map = "(k, n)" if rc == 0 else "(n, k)"
    per_thread = (tile_m // _THREADS_PER_SIDE, tile_n // _THREADS_PER_SIDE)
    attrs = {
        "indexing_maps": ctx.attr(
            f"[affine_map<(m, n, k) -> {lhs_map}>, affine_map<(m, n, k) -> {rhs_map}>, "
            "affine_map<(m, n, k) -> (m, n)>]"),
        "iterator_types": ctx.attr(
            "[#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, "
            "#linalg.iterator_type<reduction>]"),
        "compilation_info": ctx.attr(
            "#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{"
            f"workgroup = [{tile_m}, {tile_n}, 0], "
            f"thread = [{per_thread[0]}, {per_thread[1]}, 0], "
            f"reduction = [0, 0, {_K_STEP}]}}>, translation_info = "
            "#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
            f"workgroup_size = [{_THREADS_PER_SIDE}, {_THREADS_PER_SIDE}, 1] "
            "subgroup_size = 32>>"),
    }
    return ctx.linalg_multiply_add(args[0], args[1], ctx.linalg_zeros(out), out, attrs)
