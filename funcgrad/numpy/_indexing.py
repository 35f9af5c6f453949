"""NumPy-style indexing (``t[...]``), functional updates (``t.at[...]``), take, sort.

Basic indices (ints, slices, None, Ellipsis) become one ``slice`` (plus ``rev`` for
negative steps) and a reshape; integer-array indices become one ``gather``, placed as
NumPy places advanced-index dimensions.  ``.at[idx]`` updates scatter into the flat
positions that ``idx`` selects.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core import interpreter as _interp
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import indexing as ix
from funcgrad.core.prims import sorting
from funcgrad.core.prims import structural as st
from funcgrad.core.tensor import Tensor, wrap
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy._util import (
    asarray,
    broadcast_exactly,
    broadcast_shapes,
    broadcast_to,
    normalize_axis,
    promote,
)

_INT_TYPES = (int, np.integer)


class _Advanced:
    """An integer-array index entry: its value (Tensor) and the axis it consumes."""

    __slots__ = ("value", "mask_shape")

    def __init__(self, value, mask_shape=None):
        self.value = value
        self.mask_shape = mask_shape  # set on the first column made from a boolean mask


def _is_traced(x) -> bool:
    return isinstance(x, Tensor) and type(x) is not Tensor


def _is_scalar_bool(item) -> bool:
    return isinstance(item, (bool, np.bool_)) or (
        isinstance(item, (np.ndarray, Tensor)) and item.ndim == 0 and item.dtype == np.bool_)


def _with_scalar_bools(x, index, fill, mode):
    """``x[index]`` for an index holding 0-d booleans beside other entries, as NumPy: they
    act as one index array of shape (1,) (all True) or (0,), a new axis where the first
    stands, or in front when other entries separate them.  Not beside index arrays."""
    if any(isinstance(i, (list, np.ndarray, Tensor)) and not _is_scalar_bool(i)
           for i in index):
        raise TypeError("a 0-d boolean beside index arrays is not supported; index with "
                        "the arrays and add the axis with None (True) or an empty slice")
    if any(isinstance(i, Tensor) and _is_traced(i) for i in index if _is_scalar_bool(i)):
        raise TypeError("indexing with a traced 0-d boolean: the result's shape depends on "
                        "its value; use fnp.where(cond, x, y)")
    where = [k for k, i in enumerate(index) if _is_scalar_bool(i)]
    length = int(all(bool(np.asarray(index[k])) for k in where))
    first = where[0]
    rest = tuple(i for k, i in enumerate(index) if k not in where[1:])
    out = getitem(x, tuple(None if k == first else i for k, i in enumerate(rest)), fill,
                  mode)
    consumed = sum(1 for i in rest if i is not Ellipsis and i is not None and
                   not _is_scalar_bool(i))
    position = 0  # the output axis of the first bool
    for item in rest[:first]:
        if item is Ellipsis:
            position += x.ndim - consumed
        elif item is None or isinstance(item, slice):
            position += 1
    cut = [slice(None)] * out.ndim
    cut[position] = slice(0, length)
    out = getitem(out, tuple(cut))
    adjacent = where == list(range(first, first + len(where)))
    if adjacent:
        return out
    from funcgrad.numpy._shape import moveaxis

    return moveaxis(out, position, 0)


def _expand_entries(index, ndim):
    """The index as a list of entries (None, int, slice, _Advanced), Ellipsis expanded and
    boolean masks turned into integer arrays."""
    index = index if isinstance(index, tuple) else (index,)
    entries = []
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, slice):
            entries.append(item)
        elif isinstance(item, _INT_TYPES):
            entries.append(int(item))
        elif isinstance(item, (list, tuple, np.ndarray, Tensor)):
            value = item if isinstance(item, Tensor) else _index_array(item)
            if value.dtype == dtypes.bool_:
                if _is_traced(value):
                    raise TypeError(
                        "boolean mask indexing needs concrete values: the result's shape "
                        "depends on the mask. Under jit/vmap use fnp.where(mask, x, 0) instead")
                for k, col in enumerate(np.nonzero(np.asarray(value))):
                    entries.append(_Advanced(asarray(col.astype(np.int32)),
                                             value.shape if k == 0 else None))
                continue  # a mask consumes value.ndim axes, one index array each
            if value.dtype.kind not in "iu":
                raise TypeError(f"indices must be integers, slices, None, ... or integer/bool "
                                f"tensors, got a {value.dtype.name} tensor")
            entries.append(_Advanced(value))
        else:
            raise TypeError(f"invalid index {item!r} of type {type(item).__name__}: use ints, "
                            "slices, None, Ellipsis, or integer/bool tensors")
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for a tensor of rank {ndim}: {consumed} were given")
    fill = [slice(None)] * (ndim - consumed)
    if Ellipsis in [e for e in entries if not isinstance(e, _Advanced)]:
        at = next(i for i, e in enumerate(entries) if e is Ellipsis)
        entries[at:at + 1] = fill
    else:
        entries += fill
    return entries


def _index_array(item):
    """A list or array index as a Tensor; an empty list is an empty integer index (NumPy)."""
    arr = np.asarray(item)
    if arr.size == 0 and not isinstance(item, np.ndarray):
        arr = arr.astype(np.int32)
    return asarray(arr)


def _check_int(i, size, axis):
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
    return i % size


def _normalized_indices(value, size, axis, mode=None):
    """Integer index tensor with negatives wrapped; concrete ones are bounds-checked
    (``mode=None``), clamped into range (``"clip"``) or left out of range (``"fill"``,
    for the caller's mask)."""
    if not _is_traced(value):
        given = np.asarray(value)
        arr = given
        if arr.dtype == np.uint64:  # 2**64 - 1 is out of range, not -1
            arr = np.minimum(arr, np.uint64(np.iinfo(np.int64).max))
        arr = arr.astype(np.int64)  # uint8 + size 300 overflowed
        if mode is None and arr.size and (arr.min() < -size or arr.max() >= size):
            bad = given[(arr < -size) | (arr >= size)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")
        arr = np.where(arr < 0, arr + size, arr)
        if mode == "clip":
            arr = np.clip(arr, 0, max(size - 1, 0))
        return asarray(arr.astype(np.int32 if size < 2**31 else np.int64))
    if value.dtype != dtypes.int32:
        if value.dtype.itemsize >= 4:
            # out of range stays out of range: clamped into [-size - 1, size] before the
            # cast (which wrapped: uint64 2**64 - 1 read the last element, int64 2**32 + 1
            # the second)
            value = ew.min(value, st.full(value.shape, size, value.dtype))
            if value.dtype.kind == "i":
                value = ew.max(value, st.full(value.shape, -size - 1, value.dtype))
        value = ew.convert_element_type(value, dtypes.int32)
    size_t = st.full(value.shape, size, value.dtype)
    value = ew.select_n(ew.lt(value, st.zeros_like(value)), value, ew.add(value, size_t))
    if mode == "clip":
        value = ew.max(st.zeros_like(value), ew.min(value, st.full(value.shape, max(size - 1, 0),
                                                                     value.dtype)))
    return value


_BASIC_ENTRIES = (int, slice, type(None), type(Ellipsis))


def _basic(index) -> bool:
    """Whether ``index`` is a basic index of Python ints, slices of ints, None and
    Ellipsis (no arrays, no bools, no tensors), which NumPy answers with a view."""
    entries = index if type(index) is tuple else (index,)
    return all(type(e) in _BASIC_ENTRIES and (
        type(e) is not slice or all(type(v) in (int, type(None))
                                    for v in (e.start, e.stop, e.step)))
        for e in entries)


def getitem(x, index, fill=None, mode=None):
    """``x[index]`` with NumPy semantics (advanced-index placement included).

    Concrete out-of-range indices raise ``IndexError``; traced ones (under jit, vmap, ...)
    are clamped into range as JAX does, or, with ``fill`` given, pick ``fill`` instead.
    ``mode="clip"`` clamps every index, ``mode="fill"`` gives ``fill`` for every
    out-of-range one, concrete ones too (``.at[].get(mode=...)``).
    """
    if (fill is None and mode is None and type(x) is Tensor
            and _interp.current() is _interp.EAGER and _basic(index)):
        buf = x._buf
        if type(buf) is np.ndarray:  # eager fast path: NumPy's view (tensors are immutable)
            try:
                return wrap(buf[index], x._weak)
            except IndexError:
                pass  # out of range, too many indices: the message below names the axis
    x = asarray(x)
    if _is_scalar_bool(index) and not isinstance(index, Tensor):
        index = asarray(np.bool_(index))
    if isinstance(index, Tensor) and index.ndim == 0 and index.dtype == dtypes.bool_:
        # a 0-d mask, as NumPy: a new leading axis of length 1 (True) or 0 (False)
        if _is_traced(index):
            raise TypeError("indexing with a traced 0-d boolean: the result's shape depends "
                            "on its value; use fnp.where(cond, x, y)")
        return getitem(st.reshape(x, (1, *x.shape)), slice(0, int(bool(index))))
    if isinstance(index, tuple) and any(_is_scalar_bool(i) for i in index):
        return _with_scalar_bools(x, index, fill, mode)
    entries = _expand_entries(index, x.ndim)
    if mode is None and fill is None:
        x, entries = _scalar_indices_as_slices(x, entries)
    has_advanced = any(isinstance(e, _Advanced) for e in entries)
    if mode is not None:  # ints as 0-d arrays, so that their range is handled by mode too
        has_advanced = has_advanced or any(isinstance(e, int) for e in entries)
    if has_advanced:  # with arrays present, ints act as 0-d integer arrays (NumPy)
        entries = [_Advanced(asarray(np.int32(e))) if isinstance(e, int) else e
                   for e in entries]

    starts, limits, strides, reversed_axes, squeezed = [], [], [], [], []
    axis = 0
    for e in entries:
        if e is None:
            continue
        size = x.shape[axis]
        if isinstance(e, int):
            i = _check_int(e, size, axis)
            starts.append(i), limits.append(i + 1), strides.append(1)
            squeezed.append(axis)
        elif isinstance(e, slice):
            start, stop, step = e.indices(size)
            if step < 0:
                reversed_axes.append(axis)
                start, stop = size - 1 - start, size - 1 - stop
                step = -step
            count = max(0, -(-(stop - start) // step))
            starts.append(start if count else 0)
            limits.append(start + (count - 1) * step + 1 if count else 0)
            strides.append(step)
        else:
            mask_shape = e.mask_shape
            if mask_shape is not None and x.shape[axis:axis + len(mask_shape)] != mask_shape:
                got = x.shape[axis:axis + len(mask_shape)]
                raise IndexError(f"boolean index of shape {mask_shape} does not match the "
                                 f"indexed dimensions {got} (from axis {axis}) of a tensor of "
                                 f"shape {x.shape}")
            starts.append(0), limits.append(size), strides.append(1)
        axis += 1
    if reversed_axes:
        x = st.rev(x, reversed_axes)
    x = st.slice_(x, starts, limits, strides)
    if squeezed:
        x = st.reshape(x, [d for i, d in enumerate(x.shape) if i not in squeezed])

    # the plan of output dims, in order: ("dim", k) a kept axis, ("new",) a None axis,
    # ("adv",) the broadcast advanced-index dims
    plan, advanced, kept = [], [], 0
    advanced_positions = [i for i, e in enumerate(entries) if isinstance(e, _Advanced)]
    adjacent = (not advanced_positions or advanced_positions[-1] - advanced_positions[0]
                == len(advanced_positions) - 1) and _adjacent_around_ellipsis(index)
    if advanced_positions and not adjacent:
        plan.append(("adv",))
    for i, e in enumerate(entries):
        if e is None:
            plan.append(("new",))
        elif isinstance(e, _Advanced):
            advanced.append((kept, e.value))
            if adjacent and i == advanced_positions[0]:
                plan.append(("adv",))
            kept += 1
        elif isinstance(e, slice):
            plan.append(("dim", kept))
            kept += 1
    if advanced:
        axes = tuple(a for a, _ in advanced)
        values = [_normalized_indices(v, x.shape[a], a, mode) for a, v in advanced]
        batch = broadcast_shapes("indexing", *(v.shape for v in values))
        cols = [st.reshape(broadcast_to(ew.convert_element_type(v, values[0].dtype), batch),
                           (*batch, 1)) for v in values]
        idx = st.concatenate(cols, len(batch))
        rest = [a for a in range(x.ndim) if a not in axes]
        in_range = _traced_in_range(advanced, x.shape, batch, every=mode == "fill") \
            if fill is not None and mode != "clip" else None
        x = ix.gather(x, idx, axes)
        if in_range is not None:
            in_range = st.reshape(in_range, (*batch,) + (1,) * len(rest))
            x = ew.select_n(broadcast_to(in_range, x.shape),
                            st.full(x.shape, fill, x.dtype), x)
        nb = len(batch)
        where_rest = {a: nb + j for j, a in enumerate(rest)}
        perm = []
        for item in plan:
            if item[0] == "adv":
                perm += list(range(nb))
            elif item[0] == "dim":
                perm.append(where_rest[item[1]])
        x = st.transpose(x, perm)
        final = []
        dims = iter(x.shape)
        for item in plan:
            if item[0] == "adv":
                final += [next(dims) for _ in range(nb)]
            elif item[0] == "dim":
                final.append(next(dims))
            else:
                final.append(1)
        return st.reshape(x, final)
    if any(item[0] == "new" for item in plan):
        dims = iter(x.shape)
        final = [1 if item[0] == "new" else next(dims) for item in plan]
        return st.reshape(x, final)
    return x


def _scalar_indices_as_slices(x, entries):
    """Where every array index is a 0-d integer tensor, index with them as with ints:
    concrete ones become ints, traced ones one ``dynamic_slice`` of size 1 along their axes
    (cheaper than a gather, compiled or not, and its gradient an in-place update), as JAX
    does.  Traced indices wrap when negative and are clamped into range, like the gather."""
    advanced = [e for e in entries if isinstance(e, _Advanced)]
    if not advanced or any(e.value.ndim or e.mask_shape is not None for e in advanced):
        return x, entries
    starts, sizes, new_entries, axis = [], list(x.shape), [], 0
    for e in entries:
        if e is None:
            new_entries.append(e)
            continue
        start = 0
        if isinstance(e, _Advanced):
            if not _is_traced(e.value):
                e = int(np.asarray(e.value))
            else:
                start = _normalized_indices(e.value, x.shape[axis], axis)
                sizes[axis] = 1
                e = 0
        starts.append(start)
        new_entries.append(e)
        axis += 1
    if any(not isinstance(s, int) for s in starts):
        x = ix.dynamic_slice(x, starts, sizes)
    return x, new_entries


def _adjacent_around_ellipsis(index) -> bool:
    """False when an ``...`` stands between advanced indices (arrays, or ints beside
    arrays): NumPy then puts the advanced dimensions first, even where the ``...``
    stands for no axis at all."""
    items = index if isinstance(index, tuple) else (index,)
    dots = [k for k, i in enumerate(items) if i is Ellipsis]
    arrays = [k for k, i in enumerate(items) if isinstance(i, (list, np.ndarray, Tensor))]
    if not dots or not arrays:
        return True
    ints = [k for k, i in enumerate(items)
            if isinstance(i, _INT_TYPES) and not isinstance(i, (bool, np.bool_))]
    advanced = sorted(arrays + ints)
    return not any(advanced[0] < d < advanced[-1] for d in dots)


def _signed(indices):
    """Integer ``indices`` in a signed dtype that holds them and minus any axis size:
    int32, or int64 for 64-bit and uint32 ones (a uint32 index could not hold the -size
    the range checks compare with: OverflowError under jit)."""
    wide = dtypes.int64 if indices.dtype.itemsize >= 4 and indices.dtype != dtypes.int32 \
        else dtypes.int32
    if indices.dtype == dtypes.uint64:  # 2**64 - 1 is out of range, not -1
        indices = ew.min(indices, st.full(indices.shape, np.iinfo(np.int64).max, indices.dtype))
    return ew.convert_element_type(indices, wide) if indices.dtype != wide else indices


def _traced_in_range(advanced, shape, batch, every=False):
    """Whether each traced advanced index row is in range (``[-size, size)``), broadcast to
    the index batch shape; None when every index is concrete (those are checked already),
    unless ``every``."""
    ok = None
    for axis, value in advanced:
        if not (every or _is_traced(value)):
            continue
        size = shape[axis]
        value = _signed(asarray(value))
        low = ew.ge(value, st.full(value.shape, -size, value.dtype))
        high = ew.lt(value, st.full(value.shape, size, value.dtype))
        good = ew.and_p.bind(low, high)
        ok = good if ok is None else ew.and_p.bind(*(broadcast_to(g, broadcast_shapes(
            "indexing", ok.shape, good.shape)) for g in (ok, good)))
    return None if ok is None else broadcast_to(ok, batch)


# --- functional updates: t.at[idx].set(v) -----------------------------------------------


class _AtIndexer:
    """``t.at``: indexable helper for functional updates."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def __getitem__(self, index):
        return _AtRef(self.tensor, index)


_GET_MODES = {None: None, "promise_in_bounds": None, "clip": "clip", "fill": "fill"}
_UPDATE_MODES = {None: None, "promise_in_bounds": None, "clip": "clip", "drop": "fill"}


def _at_mode(method, mode, table):
    if mode not in table:
        raise ValueError(f"at[].{method}: mode must be one of "
                         f"{', '.join(repr(m) for m in table if m)} or None, got {mode!r}")
    return table[mode]


class _AtRef:
    """``t.at[idx]``: ``.get/.set/.add/.subtract/.mul/.divide/.power/.min/.max/.apply``
    return new tensors, as JAX's.  ``mode``: by default a concrete out-of-range index raises
    ``IndexError`` (a traced one is clamped by ``get``, dropped by updates); ``"clip"``
    clamps every index, ``"fill"`` (get, with ``fill_value``: NaN for floats by default)
    and ``"drop"`` (updates) handle every out-of-range one, concrete ones too.
    ``indices_are_sorted``/``unique_indices`` are accepted as hints."""

    __slots__ = ("tensor", "index")

    def __init__(self, tensor, index):
        self.tensor = tensor
        self.index = index

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
        """The selected elements, like ``t[idx]``."""
        mode = _at_mode("get", mode, _GET_MODES)
        x = asarray(self.tensor)
        if mode == "fill" and fill_value is None:
            fill_value = _default_fill(x.dtype)
        return getitem(x, self.index, fill=fill_value, mode=mode)

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the selected elements replaced by ``values``.

        >>> fg.zeros(3).at[1].set(5.0)
        tensor([0., 5., 0.], dtype=float32)
        """
        return _update(self.tensor, self.index, values, "set", _at_mode("set", mode,
                                                                         _UPDATE_MODES))

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with ``values`` added to the selected elements (repeats accumulate)."""
        return _update(self.tensor, self.index, values, "add", _at_mode("add", mode,
                                                                         _UPDATE_MODES))

    def subtract(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with ``values`` subtracted from the selected elements."""
        return _update(self.tensor, self.index, -asarray(values), "add",
                       _at_mode("subtract", mode, _UPDATE_MODES), name="subtract")

    def mul(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the selected elements multiplied by ``values``."""
        return _update(self.tensor, self.index, values, "mul", _at_mode("mul", mode,
                                                                         _UPDATE_MODES))

    multiply = mul

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the selected elements divided by ``values`` (true division, as
        ``x / y``: integers give floats; repeats divide repeatedly), as JAX's."""
        x = asarray(self.tensor)
        return elt.true_divide(x, _scattered_factors(x, self.index, values, "divide", mode))

    def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the selected elements raised to ``values`` (repeats multiply the
        exponents), as JAX's."""
        x = asarray(self.tensor)
        return elt.power(x, _scattered_factors(x, self.index, values, "power", mode))

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the selected elements replaced by min(element, values)."""
        return _update(self.tensor, self.index, values, "min", _at_mode("min", mode,
                                                                         _UPDATE_MODES))

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the selected elements replaced by max(element, values)."""
        return _update(self.tensor, self.index, values, "max", _at_mode("max", mode,
                                                                         _UPDATE_MODES))

    def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """A copy with the elementwise function ``func`` applied to the selected elements
        (once to an element selected several times).

        >>> fg.tensor([1.0, 4.0, 9.0]).at[1:].apply(fnp.sqrt)
        tensor([1., 2., 3.], dtype=float32)
        """
        x = asarray(self.tensor)
        index_mode = _at_mode("apply", mode, _UPDATE_MODES)
        selected = getitem(x, self.index, mode="clip" if index_mode else None)
        return _update(x, self.index, func(selected), "set", index_mode)


def _scattered_factors(x, index, values, method, mode):
    """Ones with ``values`` multiplied in at ``index`` (repeats multiply), in the dtype
    ``x`` and ``values`` promote to (a float for divide): what divide and power apply to
    ``x`` (as JAX builds them; uint8's divide(300) overflowed building uint8 factors)."""
    _refuse_complex_into_real(f"at[].{method}", x, values)
    _, wide = promote(f"at[].{method}", x, values, to_inexact=method == "divide")
    return _update(st.full(x.shape, 1, wide.dtype), index, wide, "mul",
                   _at_mode(method, mode, _UPDATE_MODES), name=method)


def _update(x, index, values, mode, index_mode=None, name=None):
    """``x`` with ``values`` combined in at ``index`` by ``mode`` (set/add/mul/min/max);
    ``name`` is the method errors name (subtract, divide and power use add and mul)."""
    x = asarray(x)
    name = name or mode
    label = f"at[].{name}"
    _refuse_complex_into_real(label, x, values)
    if mode in ("add", "mul") and x.dtype != dtypes.bool_:
        # as JAX: combined in the promoted dtype, then cast back (an int32 tensor's
        # .at[:].mul(1.5) scales [3, 10] to [4, 15], not by 1)
        _, wide = promote(label, x, values)
        if wide.dtype != x.dtype:
            out = _update(ew.convert_element_type(x, wide.dtype), index, wide, mode,
                          index_mode, name)
            return ew.convert_element_type(out, x.dtype)
    if index_mode is None and _combines_by_window(mode, x.dtype):
        updated = _update_window(x, index, values, mode)
        if updated is not None:
            return updated
    index_dtype = dtypes.int32 if x.size < 2**31 else dtypes.int64
    # traced out-of-range indices point past the end, so the scatter drops them (as JAX)
    positions = getitem(st.reshape(st.iota(index_dtype, (x.size,), 0), x.shape), index,
                        fill=x.size, mode=index_mode)
    values = _update_values(values, x.dtype, positions.shape, label)
    if positions.size == 0:  # nothing selected (x.at[n:] with n == len(x)): x as it is;
        return x  # an empty scatter crashed IREE 3.13's compiler (AnnotateDispatches)
    flat = st.reshape(x, (x.size,))
    out = ix.scatter(flat, st.reshape(positions, (positions.size, 1)),
                     st.reshape(values, (positions.size,)), (0,), mode)
    return st.reshape(out, x.shape)


def _refuse_complex_into_real(label, x, values):
    """Casting complex update values to a real tensor's dtype would drop their imaginary
    parts unseen (JAX warns that this will become an error)."""
    value_dtype = values.dtype if hasattr(values, "dtype") else np.asarray(values).dtype
    if dtypes.is_complex(value_dtype) and not dtypes.is_complex(x.dtype):
        raise TypeError(f"{label}: complex values cannot update a {x.dtype.name} tensor "
                        "without losing their imaginary parts; make the tensor complex "
                        "first (t.astype(fg.complex64).at[...]) or pass values.real")


def _update_values(values, dtype, shape, name):
    """The values of an ``.at[]`` update in the tensor's ``dtype``, broadcast to the indexed
    ``shape`` (a clear error naming the method, ``name``, when they do not fit)."""
    values = asarray(values)
    if values.dtype != dtype:
        values = ew.convert_element_type(values, dtype)
    return broadcast_exactly(name, values, shape, "values", "the indexed")


def _combines_by_window(mode, dtype) -> bool:
    """Whether an ``.at[]`` update with a traced 0-d index may combine its window
    elementwise in one dynamic_update_slice (each element is updated once, so that is the
    scatter): not bool add/mul/min/max (a scatter's logical combines) nor complex min/max
    (ordered by parts).  Besides updating in place, the window keeps the jvp of a mul away
    from the pairwise collision products of _product_of_colliding_others, whose fused
    dispatch IREE 3.13 could not compile under aggressive fusion (design.md)."""
    if mode == "set":
        return True
    return dtype != dtypes.bool_ and (mode in ("add", "mul") or not dtypes.is_complex(dtype))


_WINDOW_COMBINE = {"add": ew.add, "mul": ew.mul, "min": ew.min, "max": ew.max}


def _update_window(x, index, values, mode):
    """``x.at[index].set/add/mul/min/max(values)`` as one ``dynamic_update_slice`` where
    ``index`` is ints, step-1 slices and at least one traced 0-d integer tensor
    (``x.at[i].set(v)`` in a loop): in place when compiled, where a scatter copies the whole
    array.  A traced index out of range leaves ``x`` as it is (JAX drops such updates).
    None otherwise."""
    if any(_is_scalar_bool(i) for i in (index if isinstance(index, tuple) else (index,))):
        return None  # the new axis of a 0-d bool: getitem's
    entries = _expand_entries(index, x.ndim)
    traced = [e for e in entries if isinstance(e, _Advanced) and _is_traced(e.value)]
    if not traced or any(e is None or (isinstance(e, _Advanced) and (
            e.value.ndim or e.mask_shape is not None or not _is_traced(e.value)))
            or (isinstance(e, slice) and e.indices(x.shape[a])[2] != 1)
            for a, e in enumerate(entries)):
        return None
    starts, window, indexed, in_range = [], [], [], None
    for axis, (e, size) in enumerate(zip(entries, x.shape, strict=True)):
        if isinstance(e, slice):
            start, stop, _ = e.indices(size)
            starts.append(start), window.append(max(stop - start, 0))
            indexed.append(window[-1])
        elif isinstance(e, int):
            starts.append(_check_int(e, size, axis)), window.append(1)
        else:
            i = ew.convert_element_type(e.value, dtypes.int32)
            inside = ew.and_p.bind(ew.ge(i, st.full((), -size, dtypes.int32)),
                                   ew.lt(i, st.full((), size, dtypes.int32)))
            in_range = inside if in_range is None else ew.and_p.bind(in_range, inside)
            starts.append(_normalized_indices(i, size, axis)), window.append(1)
    if 0 in window:
        return None
    values = st.reshape(_update_values(values, x.dtype, tuple(indexed), f"at[].{mode}"),
                        window)
    old = ix.dynamic_slice(x, starts, window)
    if mode != "set":
        values = _WINDOW_COMBINE[mode](old, values)
    values = ew.select_n(broadcast_to(in_range, tuple(window)), old, values)
    return ix.dynamic_update_slice(x, values, starts)


# --- take, take_along_axis, sorting, nonzero ----------------------------------------------


_TAKE_MODES = (None, "raise", "fill", "clip", "wrap")


def take(x, indices, axis=None, mode=None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value=None):
    """Elements of ``x`` at ``indices`` along ``axis`` (of the flattened ``x`` by default).
    Arguments in ``jax.numpy.take``'s order (its ``unique_indices``/``indices_are_sorted``
    hints change nothing here).

    ``mode``: ``"clip"`` clamps indices into range, ``"wrap"`` takes them modulo the size,
    ``"fill"`` picks ``fill_value`` (NaN for floats, as JAX) for out-of-range ones; by
    default (``None``/``"raise"``) a concrete out-of-range index raises ``IndexError`` and a
    traced one picks ``fill_value``.

    >>> fnp.take(fg.tensor([10, 20, 30]), fg.tensor([2, 0]))
    tensor([30, 10], dtype=int32)
    """
    if mode not in _TAKE_MODES:
        raise ValueError(f"take: mode must be one of {_TAKE_MODES[1:]} (or None), got {mode!r}")
    x = asarray(x)
    if axis is None:
        x, axis = st.reshape(x, (x.size,)), 0
    axis = normalize_axis("take", axis, x.ndim)
    indices = indices if isinstance(indices, Tensor) else _index_array(indices)
    size = x.shape[axis]
    if mode in ("clip", "wrap") and size:
        if mode == "wrap" and indices.dtype.kind == "u" and size <= np.iinfo(indices.dtype).max:
            # modulo before a signed cast saturates the largest uint64 values
            indices = ew.rem(indices, st.full(indices.shape, size, indices.dtype))
        indices = _signed(indices)
        bound = st.full(indices.shape, size, indices.dtype)
        if mode == "clip":
            indices = ew.max(st.zeros_like(indices), ew.min(indices, ew.sub(bound, st.full(
                indices.shape, 1, indices.dtype))))
        else:
            indices = ew.rem(ew.add(ew.rem(indices, bound), bound), bound)
        return getitem(x, (slice(None),) * axis + (indices,))
    if fill_value is None:
        fill_value = _default_fill(x.dtype)
    # an explicit mode="fill" fills concrete out-of-range indices too (as JAX)
    return getitem(x, (slice(None),) * axis + (indices,), fill=fill_value,
                   mode="fill" if mode == "fill" else None)


def _default_fill(dtype):
    """JAX's fill for out-of-range ``take``: NaN, the most negative signed int, the largest
    unsigned int, True."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def take_along_axis(x, indices, axis=-1, mode=None, fill_value=None):
    """Pick along ``axis`` with an index tensor shaped like ``x`` (NumPy semantics).

    Out-of-range indices: concrete ones raise ``IndexError``, traced ones pick
    ``fill_value`` (NaN for floats, as JAX); ``mode="fill"`` fills concrete ones too,
    ``mode="clip"`` clamps them.

    >>> x = fg.tensor([[3, 1], [2, 4]])
    >>> fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1)
    tensor([[1, 3],
            [2, 4]], dtype=int32)
    """
    x = asarray(x)
    indices = indices if isinstance(indices, Tensor) else _index_array(indices)
    if axis is None:
        x, axis = st.reshape(x, (x.size,)), 0
    if not dtypes.is_integer(indices.dtype):
        raise TypeError(f"take_along_axis: indices must be integers, got {indices.dtype.name}")
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices of rank {indices.ndim} must match x's rank "
                         f"{x.ndim}")
    axis = normalize_axis("take_along_axis", axis, x.ndim)
    x_shape = list(x.shape)
    idx_shape = list(indices.shape)
    x_shape[axis] = idx_shape[axis] = 1
    common = list(broadcast_shapes("take_along_axis", tuple(x_shape), tuple(idx_shape)))
    x_target = common.copy()
    x_target[axis] = x.shape[axis]
    idx_target = common.copy()
    idx_target[axis] = indices.shape[axis]
    if mode not in (None, "fill", "clip", "promise_in_bounds"):
        raise ValueError(f"take_along_axis: mode must be 'fill', 'clip' or None, got {mode!r}")
    mode = None if mode == "promise_in_bounds" else mode
    x = broadcast_to(x, tuple(x_target))
    size = x.shape[axis]
    picked = ix.take_along_axis(x, broadcast_to(_normalized_indices(indices, size, axis, mode),
                                                tuple(idx_target)), axis)
    if mode == "clip" or not (mode == "fill" or _is_traced(indices)):
        return picked
    in_range = _traced_in_range([(axis, indices)], x.shape, picked.shape, every=True)
    fill = _default_fill(x.dtype) if fill_value is None else fill_value
    return ew.select_n(in_range, st.full(picked.shape, fill, picked.dtype), picked)


def sort(x, axis=-1, kind=None, order=None, *, stable: bool = True, descending: bool = False):
    """Sorted copy along ``axis`` (flattened if None); NaNs go last.

    >>> fnp.sort(fg.tensor([3.0, 1.0, 2.0]))
    tensor([1., 2., 3.], dtype=float32)
    """
    x = asarray(x)
    if axis is None:
        x, axis = st.reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return x
    axis = normalize_axis("sort", axis, x.ndim)
    (out,) = sorting.sort((x,), axis, 1)
    return st.rev(out, (axis,)) if descending else out


def argsort(x, axis=-1, kind=None, order=None, *, stable: bool = True,
            descending: bool = False):
    """Indices that sort ``x`` along ``axis`` (stable).

    >>> fnp.argsort(fg.tensor([3.0, 1.0, 2.0]))
    tensor([1, 2, 0], dtype=int32)
    """
    x = asarray(x)
    if axis is None:
        x, axis = st.reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return st.full((), 0, dtypes.int32)
    axis = normalize_axis("argsort", axis, x.ndim)
    if descending:
        # a stable ascending sort of the reversed values, reversed back: equal values keep
        # their order, NaNs come first (as sort(descending=True)), and nothing overflows
        # as negating the most negative integer would
        flipped = argsort(st.rev(x, (axis,)), axis)
        return (x.shape[axis] - 1) - st.rev(flipped, (axis,))
    _, perm = sorting.sort((x, st.iota(dtypes.int32, x.shape, axis)), axis, 1)
    return perm


def nonzero(x, *, size=None, fill_value=None):
    """Indices of the non-zero elements, one int32 tensor per axis.

    The count depends on the values, so traced input (jit, vmap) needs ``size``, as in
    JAX: the first ``size`` indices, padded with ``fill_value`` (0, or one value per axis).

    >>> fnp.nonzero(fg.tensor([0, 3, 0, 4]))
    (tensor([1, 3], dtype=int32),)
    """
    x = asarray(x)
    if x.ndim == 0:  # as NumPy 2 and JAX (argwhere handles 0-d itself)
        raise ValueError("nonzero: a 0-d tensor has no axes to give indices along; use "
                         "fnp.atleast_1d(x) first (or fnp.argwhere)")
    if size is not None:
        return _nonzero_sized(x, operator.index(size), fill_value)
    if _is_traced(x):
        raise TypeError("nonzero: the result's shape depends on the values, so traced input "
                        "needs size= (e.g. fnp.nonzero(x, size=n)); or use "
                        "fnp.where(cond, x, y)")
    return tuple(asarray(i.astype(np.int32)) for i in np.nonzero(np.asarray(x)))


def _nonzero_sized(x, size, fill_value):
    """The first ``size`` non-zero positions, by each one's rank among them (a cumulative
    count), scattered into a fixed-size result."""
    from funcgrad.numpy._reductions import cumsum
    from funcgrad.numpy._reductions import sum as _sum

    flat = elt._truth(st.reshape(x, (x.size,)))
    ones = flat.astype(dtypes.int32)
    target = elt.where(flat, cumsum(ones) - 1, size)  # its rank; out of range: dropped
    positions = st.iota(dtypes.int32, (x.size,), 0)
    found = st.full((size,), 0, dtypes.int32).at[target].set(positions, mode="drop")
    valid = st.iota(dtypes.int32, (size,), 0) < _sum(ones)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else \
        [0 if fill_value is None else fill_value] * x.ndim
    if len(fills) != x.ndim:
        raise ValueError(f"nonzero: fill_value needs one value per axis ({x.ndim}), got "
                         f"{len(fills)}")
    out, stride = [], x.size
    for extent, fill in zip(x.shape, fills, strict=True):
        stride //= builtins.max(extent, 1)
        index = elt.remainder(elt.floor_divide(found, builtins.max(stride, 1)), extent) \
            if extent else found
        out.append(elt.where(valid, index, asarray(fill, dtypes.int32)))
    return tuple(out)


def argwhere(x, *, size=None, fill_value=None):
    """Indices of the non-zero elements as rows of an (N, ndim) tensor (traced input needs
    ``size``, see ``nonzero``)."""
    from funcgrad.numpy._shape import stack

    x = asarray(x)
    cols = () if x.ndim == 0 else nonzero(x, size=size, fill_value=fill_value)
    if not cols:
        return asarray(np.zeros((int(bool(x)) if size is None else size, 0), np.int32))
    return stack(cols, axis=1)


def flatnonzero(x, *, size=None, fill_value=None):
    """Indices of the non-zero elements of the flattened tensor (traced input needs
    ``size``, see ``nonzero``)."""
    x = asarray(x)
    return nonzero(st.reshape(x, (x.size,)), size=size, fill_value=fill_value)[0]


def searchsorted(a, v, side: str = "left", sorter=None):
    """Insertion positions of ``v`` in the sorted 1-d ``a`` that keep it sorted (``a``
    taken in the order of the indices ``sorter`` when given, as NumPy).

    >>> fnp.searchsorted(fg.tensor([1.0, 2.0, 3.0]), 2.5)
    tensor(2, dtype=int32)
    """
    from funcgrad.numpy._reductions import sum as _sum

    if side not in ("left", "right"):
        raise ValueError("searchsorted: side must be 'left' or 'right'")
    a, v = asarray(a), asarray(v)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got shape {a.shape}")
    if sorter is not None:
        a = take(a, sorter)
    from funcgrad.numpy._util import promote

    a, v = promote("searchsorted", a, v)
    grid_v = st.broadcast_in_dim(v, (*v.shape, a.shape[0]), tuple(range(v.ndim)))
    grid_a = st.broadcast_in_dim(a, (*v.shape, a.shape[0]), (v.ndim,))
    below = ew.lt(grid_a, grid_v) if side == "left" else ew.le(grid_a, grid_v)
    if dtypes.is_inexact(a.dtype) and not dtypes.is_complex(a.dtype):
        # NaNs sort last (NumPy's order): a NaN in v goes after every number, and
        # after the NaNs too for side="right"
        nan_v = ew.ne(grid_v, grid_v)
        past = ew.eq(grid_a, grid_a) if side == "left" else None
        below = ew.or_p.bind(below, nan_v if past is None else ew.and_p.bind(nan_v, past))
    return _sum(below, axis=-1, dtype=dtypes.int32)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           size=None, fill_value=None):
    """Sorted unique elements, as ``numpy.unique`` (NaNs count as one value).

    Their number depends on the values, so traced input (jit, vmap) needs ``size``, as in
    JAX: the first ``size`` unique values, padded with ``fill_value`` (default: the
    smallest value), their first indices padded with the smallest value's, counts with 0.

    >>> fnp.unique(fg.tensor([3, 1, 3]), size=3, fill_value=-1)
    tensor([ 1,  3, -1], dtype=int32)
    """
    x = asarray(x)
    if size is not None:
        return _unique_sized(x, size, fill_value, axis, return_index, return_inverse,
                             return_counts)
    if _is_traced(x):
        raise TypeError("unique: the result's shape depends on the values; pass size= (and "
                        "fill_value=) under jit/vmap, or call it on concrete input")
    out = np.unique(np.asarray(x), return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis)
    if isinstance(out, tuple):
        return tuple(asarray(o.astype(np.int32) if o.dtype == np.int64 and i else o)
                     for i, o in enumerate(out))
    return asarray(out)


def _unique_sized(x, size, fill_value, axis, return_index, return_inverse, return_counts):
    """unique with a static result size: sort, mark where a value differs from the one
    before (NaNs equal to each other), and gather the first ``size`` marked values."""
    from funcgrad.numpy._creation import arange, zeros
    from funcgrad.numpy._reductions import cumsum
    from funcgrad.numpy._reductions import sum as _sum

    if axis is not None:
        raise ValueError("unique: size= works on the flattened input only (axis=None)")
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"unique: size must be a non-negative int, got {size!r}")
    n = x.size
    if n == 0 and size and fill_value is None:
        raise ValueError("unique: an empty input has no smallest value to pad with; pass "
                         "fill_value=")
    flat = st.reshape(x, (n,))
    order = argsort(flat) if n else zeros((0,), dtypes.int32)
    ordered = take(flat, order)
    differs = elt.not_equal(ordered[1:], ordered[:-1])
    if dtypes.is_inexact(x.dtype):
        differs = elt.logical_and(differs, elt.logical_not(elt.logical_and(
            elt.isnan(ordered[1:]), elt.isnan(ordered[:-1]))))
    first = st.concatenate([asarray(np.ones(builtins.min(n, 1), np.bool_)), differs], 0)
    (positions,) = nonzero(first, size=size, fill_value=0)
    values = take(ordered, positions) if n else zeros((size,), x.dtype)
    if fill_value is not None:
        found = elt.less(arange(size, dtype=dtypes.int32), _sum(first.astype(dtypes.int32)))
        values = elt.where(found, values, asarray(fill_value, x.dtype))
    outputs = [values]
    group = cumsum(first.astype(dtypes.int32)) - 1
    if return_index:
        outputs.append(take(order, positions) if n else zeros((size,), dtypes.int32))
    if return_inverse:
        inverse = zeros((n,), dtypes.int32).at[order].set(group)
        outputs.append(st.reshape(inverse, x.shape))
    if return_counts:
        outputs.append(zeros((size,), dtypes.int32).at[group].add(1, mode="drop"))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def tril_indices(n: int, k: int = 0, m: int | None = None):
    """Row and column indices of the lower triangle of an ``(n, m)`` matrix (int32)."""
    return tuple(asarray(i.astype(np.int32)) for i in np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: int | None = None):
    """Row and column indices of the upper triangle of an ``(n, m)`` matrix (int32)."""
    return tuple(asarray(i.astype(np.int32)) for i in np.triu_indices(n, k, m))


def select(condlist, choicelist, default=0):
    """Per element, the choice of the first true condition (``default`` where none is),
    as ``numpy.select``."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: {len(condlist)} conditions but {len(choicelist)} choices")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist, strict=True))):
        cond = asarray(cond)
        if cond.dtype != dtypes.bool_:
            raise TypeError(f"select: conditions must be boolean, got {cond.dtype.name}")
        out = elt.where(cond, choice, out)
    return asarray(out)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False):
    """Whether each element occurs in ``test_elements`` (flattened), as ``numpy.isin``
    (``assume_unique`` changes nothing)."""
    from funcgrad.numpy._reductions import any as _any

    element, tests = asarray(element), asarray(test_elements)
    tests = st.reshape(tests, (tests.size,))
    hit = _any(elt.equal(st.reshape(element, (*element.shape, 1)), tests), axis=-1)
    return elt.logical_not(hit) if invert else hit


# the public names are this module's own functions (not the helpers it imports)
__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__]
