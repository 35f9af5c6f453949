"""Multi-head attention (PyTorch's MultiheadAttention with batch_first=True)."""

from __future__ import annotations

import math

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor
from funcgrad.nn import functional as F
from funcgrad.nn import init
from funcgrad.nn.linear import Linear
from funcgrad.nn.module import Module
from funcgrad.numpy._util import asarray

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head scaled dot-product attention, as PyTorch's with ``batch_first=True``.

    Parameters as PyTorch's: ``in_proj_weight`` (3E, E) (Xavier uniform), ``in_proj_bias``
    (3E,) (zeros), ``out_proj`` a ``Linear(E, E)`` with a zero bias.

    Call as ``mha(query, key, value, *, key_padding_mask=None, attn_mask=None,
    is_causal=False, need_weights=False, average_attn_weights=True, dropout_key=None,
    inference=None)``
    with ``query`` ``(N, L, E)`` or ``(L, E)`` and ``key``/``value`` ``(N, S, E)`` or
    ``(S, E)``.  Masks follow PyTorch's ``nn.MultiheadAttention``: a boolean ``attn_mask``
    ``(L, S)`` or ``(N * num_heads, L, S)`` is True where attention is NOT allowed; a
    float mask is added to the scores; ``key_padding_mask`` ``(N, S)`` is True at keys to
    ignore.  ``is_causal=True`` additionally masks future positions (``j > i``).  Note
    that ``F.scaled_dot_product_attention``'s boolean mask has the opposite meaning (True =
    allowed), also as in PyTorch.  Dropout on the attention weights runs only when
    ``dropout_key`` is given (the call's signature in the API makes it optional, so a call
    without it is a call without dropout); ``inference=True`` (at construction or at the
    call) turns it off even with a key.

    Returns the output ``(N, L, E)`` (or ``(L, E)``), or ``(output, weights)`` with
    ``need_weights=True``: weights ``(N, L, S)`` averaged over the heads (``(N,
    num_heads, L, S)`` with ``average_attn_weights=False``).

    Arguments:
        embed_dim: the model dimension ``E`` (query, key and value all have it).
        num_heads: the number of heads; must divide ``embed_dim``.
        dropout: dropout probability on the attention weights.
        inference: the default mode (a call's ``inference=`` overrides it); keyword-only.
        bias: whether the projections have biases.
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> mha = nn.MultiheadAttention(16, 4, key=fg.random.key(0))
        >>> x = fg.ones((2, 5, 16))
        >>> out, weights = mha(x, x, x, is_causal=True, need_weights=True)
        >>> out.shape, weights.shape
        ((2, 5, 16), (2, 5, 5))
    """

    in_proj_weight: Tensor
    in_proj_bias: Tensor | None
    out_proj: Linear
    embed_dim: int
    num_heads: int
    dropout: float
    inference: bool

    def __init__(self, embed_dim: int, num_heads: int, *, dropout: float = 0.0,
                 bias: bool = True, key, dtype=None, inference: bool = False):
        if num_heads < 1 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads})")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
        self.embed_dim, self.num_heads, self.dropout = int(embed_dim), int(num_heads), \
            float(dropout)
        self.inference = bool(inference)
        in_key, out_key = random.split(key)
        self.in_proj_weight = init.xavier_uniform(in_key, (3 * embed_dim, embed_dim), dtype)
        self.in_proj_bias = init.zeros(None, (3 * embed_dim,), dtype) if bias else None
        out_proj = Linear(embed_dim, embed_dim, bias=bias, key=out_key, dtype=dtype)
        if bias:
            out_proj = out_proj.replace(bias=init.zeros(None, (embed_dim,), dtype))
        self.out_proj = out_proj

    def _project(self, x, index: int):
        e = self.embed_dim
        w = self.in_proj_weight[index * e:(index + 1) * e]
        y = fnp.matmul(x, w.T)
        if self.in_proj_bias is not None:
            y = y + self.in_proj_bias[index * e:(index + 1) * e]
        n, length = y.shape[:2]
        y = fnp.reshape(y, (n, length, self.num_heads, e // self.num_heads))
        return fnp.transpose(y, (0, 2, 1, 3))  # (N, H, length, D)

    def forward(self, query, key, value, *, key_padding_mask=None, attn_mask=None,
                is_causal: bool = False, need_weights: bool = False,
                average_attn_weights: bool = True, dropout_key=None,
                inference: bool | None = None):
        query, key, value = asarray(query), asarray(key), asarray(value)
        e, h = self.embed_dim, self.num_heads
        unbatched = query.ndim == 2
        want = 2 if unbatched else 3
        form = "(L, E)" if unbatched else "(N, L, E)"
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.ndim != want or x.shape[-1] != e:
                raise ValueError(f"MultiheadAttention: expected {name} of shape {form} with "
                                 f"E = {e} (query, key and value batched alike), got shapes "
                                 f"{query.shape}, {key.shape}, {value.shape}")
        if unbatched:
            query, key, value = query[None], key[None], value[None]
        n, length, source = query.shape[0], query.shape[1], key.shape[1]
        if key.shape[:2] != value.shape[:2] or key.shape[0] != n:
            raise ValueError(f"MultiheadAttention: key {key.shape} and value {value.shape} "
                             f"must share (N, S), and N must match query {query.shape}")
        q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
        scores = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(e // h))
        allowed, additive = self._masks(attn_mask, key_padding_mask, is_causal, n, length,
                                        source, unbatched, scores.dtype)
        inference = self.inference if inference is None else inference
        use_dropout = self.dropout > 0.0 and not inference and dropout_key is not None
        weights = F.attention_weights(scores, allowed=allowed, additive=additive,
                                      dropout_p=self.dropout if use_dropout else 0.0,
                                      dropout_key=dropout_key)
        out = fnp.matmul(weights, v)  # (N, H, L, D)
        out = fnp.reshape(fnp.transpose(out, (0, 2, 1, 3)), (n, length, e))
        out = self.out_proj(out)
        if unbatched:
            out = out[0]
        if not need_weights:
            return out
        if average_attn_weights:
            weights = fnp.mean(weights, axis=1)
        return out, (weights[0] if unbatched else weights)

    def _masks(self, attn_mask, key_padding_mask, is_causal, n, length, source, unbatched,
               dtype):
        """(allowed, additive) masks broadcastable to (N, H, L, S); either may be None."""
        h = self.num_heads
        allowed = additive = None

        def combine(mask):
            nonlocal allowed, additive
            F.check_attention_mask("MultiheadAttention", mask)
            if mask.dtype == bool:
                allowed = ~mask if allowed is None else allowed & ~mask
            else:
                mask = mask.astype(dtype)
                additive = mask if additive is None else additive + mask

        if attn_mask is not None:
            attn_mask = asarray(attn_mask)
            if attn_mask.shape == (length, source):
                combine(attn_mask)
            elif attn_mask.shape == (n * h, length, source):
                combine(fnp.reshape(attn_mask, (n, h, length, source)))
            else:
                batch = f"({h}, {length}, {source})" if unbatched else \
                    f"({n} * {h}, {length}, {source})"
                raise ValueError(f"MultiheadAttention: attn_mask must have shape "
                                 f"({length}, {source}) or {batch}, got {attn_mask.shape}")
        if key_padding_mask is not None:
            key_padding_mask = asarray(key_padding_mask)
            expected = (source,) if unbatched else (n, source)
            if key_padding_mask.shape != expected:
                raise ValueError(f"MultiheadAttention: key_padding_mask must have shape "
                                 f"{expected}, got {key_padding_mask.shape}")
            combine(fnp.reshape(key_padding_mask, (n, 1, 1, source)))
        if is_causal:
            combine(~F.causal_mask(length, source))
        return allowed, additive
