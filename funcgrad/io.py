"""fg.save / fg.load: pytrees of Tensors in safetensors files.

Each leaf is stored under its pytree path with ``.`` between the keys
(``{"layers": [Linear]}``'s weight is ``"layers.0.weight"``), so the file reads naturally
in any safetensors tool and loads in PyTorch.  The tree structure goes into the file's
metadata, so dicts, lists and tuples come back without a template; ``like=`` rebuilds
into a given structure (an ``nn.Module`` for instance) and checks every path, shape and
dtype against it.  Writes are atomic: a temporary file in the same directory, renamed
over the target only once complete.

>>> params = {"w": fg.ones((2, 3)), "b": fg.zeros(3)}
>>> fg.save("params.safetensors", params)
>>> fg.load("params.safetensors", like=params)["w"].shape
(2, 3)
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import optree
import safetensors
import safetensors.numpy as _safetensors_numpy

from funcgrad import tree as _tree
from funcgrad.core import dtypes
from funcgrad.core.interpreter import Tracer
from funcgrad.core.tensor import Tensor, asarray, tensor, to_numpy_array

__all__ = ["load", "save"]

_STRUCTURE_KEY = "funcgrad.structure"
_DTYPES_KEY = "funcgrad.dtypes"
# dtypes the safetensors format stores natively (by NumPy name); others go in as raw bytes
_NATIVE = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64", "bfloat16", "complex64"}
# the safetensors dtype codes of the dtypes above, the ones a file may hold for fg.load
_READABLE = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16",
             "F32", "F64", "C64"}
# the first bytes of files that are not safetensors but often mistaken for them
_FOREIGN = {b"PK\x03\x04": "a zip archive, as torch.save writes",
            b"\x80": "a pickle, as torch.save (legacy) or pickle.dump write",
            b"\x93NUMPY": "a NumPy .npy file",
            b"\x89HDF": "an HDF5 file"}
_Kind = optree.PyTreeKind


# --- naming and structure ---------------------------------------------------------------------


def _child_name(prefix: str, key) -> str:
    return str(key) if not prefix else f"{prefix}.{key}"


def _describe(spec, prefix: str, names: list) -> Any:
    """Walk the treedef ``spec``: append leaf names (in leaf order) to ``names`` and return
    a JSON-able description of the structure (None where it cannot be described)."""
    if spec.is_leaf():
        names.append(prefix if prefix else "_")
        return {"leaf": names[-1]}
    kind = spec.kind
    if kind == _Kind.NONE:
        return None
    children = spec.children()
    if kind in (_Kind.NAMEDTUPLE, _Kind.STRUCTSEQUENCE):
        keys = list(getattr(spec.type, "_fields", None) or spec.entries())
    elif kind in (_Kind.LIST, _Kind.TUPLE, _Kind.DEQUE):
        keys = list(range(len(children)))
    else:
        keys = list(spec.entries())
    described = [_describe(c, _child_name(prefix, k), names)
                 for k, c in zip(keys, children, strict=True)]
    encodable = all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in keys)
    if kind in (_Kind.LIST, _Kind.DEQUE):
        return {"list": described}
    if kind == _Kind.TUPLE:
        return {"tuple": described}
    if not encodable:
        return _Unencodable
    if kind in (_Kind.DICT, _Kind.ORDEREDDICT, _Kind.DEFAULTDICT, _Kind.FROZENDICT):
        return {"dict": [[k, d] for k, d in zip(keys, described, strict=True)]}
    # namedtuples, dataclasses, nn.Modules: loaded back as a dict of their fields
    return {"dict": [[k, d] for k, d in zip(keys, described, strict=True)],
            "type": f"{spec.type.__module__}.{spec.type.__qualname__}"}


_Unencodable = {"unencodable": True}


def _names_and_structure(t) -> tuple[list, Any, Any]:
    """(leaf names, JSON structure or None, treedef) of ``t``; names must be unique."""
    spec = _tree.structure(t)
    names: list = []
    description = _describe(spec, "", names)
    if "unencodable" in json.dumps(description):
        description = _Unencodable
    seen: dict = {}
    for name in names:
        if name in seen:
            raise ValueError(f"save: two leaves get the tensor name {name!r} (keys containing "
                             "'.' or keys like 1 and '1' side by side); rename the keys")
        seen[name] = True
    return names, description, spec


def _rebuild(description, arrays: dict):
    if description is None:
        return None
    if "leaf" in description:
        return arrays[description["leaf"]]
    if "list" in description:
        return [_rebuild(d, arrays) for d in description["list"]]
    if "tuple" in description:
        return tuple(_rebuild(d, arrays) for d in description["tuple"])
    return {k: _rebuild(d, arrays) for k, d in description["dict"]}


# --- leaves to host arrays and back -----------------------------------------------------------


def _host_array(name: str, leaf) -> np.ndarray:
    if isinstance(leaf, Tracer):
        raise TypeError(f"fg.save: the leaf at {name!r} is a traced value: fg.save cannot run "
                        "inside jit, grad or vmap (it would run once, while tracing); return "
                        "the values from the transformed function and save them outside it")
    # np.asarray(order="C"), not np.ascontiguousarray, which makes 0-d arrays 1-d
    if isinstance(leaf, Tensor):
        array = np.asarray(leaf.numpy(), order="C")
    elif isinstance(leaf, np.ndarray):
        # fg.tensor's conversion: native byte order, and only dtypes funcgrad has (fg.load
        # could not read back strings, datetimes, float8, int4 or long double)
        try:
            array = np.asarray(to_numpy_array(leaf), order="C")
        except (TypeError, ValueError):
            raise TypeError(f"fg.save: the leaf at {name!r} has dtype {leaf.dtype}, which "
                            f"funcgrad has no tensors of; convert it to one of "
                            f"{', '.join(d.name for d in dtypes.SUPPORTED)} or drop "
                            "it") from None
    else:
        try:
            array = np.asarray(asarray(leaf).numpy(), order="C")
        except (TypeError, ValueError, RuntimeError) as error:
            kind = f"{type(leaf).__module__}.{type(leaf).__qualname__}"
            raise TypeError(f"fg.save: the leaf at {name!r} (a {kind}) cannot be converted "
                            f"to an array ({error}); only arrays can be saved (convert it to "
                            "a NumPy array or Tensor, make it a static field or drop "
                            "it)") from None
    return array


def _encode(array: np.ndarray) -> tuple[np.ndarray, str | None]:
    """The array safetensors stores and, for dtypes it lacks, the dtype to restore."""
    if array.dtype.name in _NATIVE:
        return array, None
    raw = array.reshape(-1).view(np.uint8).reshape(*array.shape, array.dtype.itemsize)
    return raw, array.dtype.name


def _decode(array: np.ndarray, dtype_name: str | None) -> np.ndarray:
    if dtype_name is None:
        return array
    dtype = np.dtype(dtype_name)
    return np.asarray(array, order="C").view(dtype).reshape(array.shape[:-1])


def _spec_of(leaf) -> tuple[tuple, np.dtype]:
    if isinstance(leaf, (Tensor, np.ndarray)):
        return tuple(leaf.shape), np.dtype(leaf.dtype)
    a = asarray(leaf)
    return tuple(a.shape), np.dtype(a.dtype)


# --- save / load ------------------------------------------------------------------------------


def file_path(path, who: str) -> str:
    """``path`` (a str, bytes or os.PathLike) as a str, refused when empty."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{who}: path must be a str or os.PathLike, got "
                        f"{type(path).__name__}")
    path = os.fsdecode(os.fspath(path))
    if not path:
        raise ValueError(f"{who}: the path is empty; pass the name of a file")
    return path


def check_destination(path: str, who: str) -> None:
    """Raise before any work if ``path`` cannot be written as a file."""
    if path.endswith(("/", os.sep)) or (os.altsep and path.endswith(os.altsep)):
        raise IsADirectoryError(f"{who}: {path!r} ends with a separator, so it names a "
                                "directory; pass the path of a file")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{who}: the directory of {path!r} does not exist; create "
                                f"it first (os.makedirs({directory!r}, exist_ok=True))")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{who}: {path!r} is a directory; pass the path of a file "
                                f"(one inside it, say) instead")


def _file_mode(path: str) -> int:
    """The permissions ``open(path, "w")`` would leave: an existing file's own, else 0o666
    less the umask (safetensors creates its files 0600, unreadable to the group)."""
    with contextlib.suppress(OSError):
        return os.stat(path).st_mode & 0o7777
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as status:  # reads the umask without changing it
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(path: str, write: Callable[[str], None], *, who: str) -> None:
    """Have ``write(temporary)`` write a file next to ``path`` and rename it to ``path``.

    A crash or an error midway leaves any old ``path`` intact and no temporary behind;
    the data and the rename are flushed to disk.  ``who`` names the caller in errors.
    """
    check_destination(path, who)
    directory = os.path.dirname(os.path.abspath(path))
    # the name is cut so that the temporary's stays within the usual 255-byte limit
    temporary = os.path.join(directory,
                             f".{os.path.basename(path)[:200]}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        write(temporary)
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(temporary, _file_mode(path))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    with contextlib.suppress(OSError, AttributeError):  # make the rename itself durable
        directory_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)


def save(path: str | os.PathLike, tree: Any) -> None:
    """Write the Tensors of ``tree`` to the safetensors file ``path``, atomically.

    Arguments:
        path: the file to write (replaced if it exists; nothing is appended to the name).
        tree: a pytree of Tensors or arrays (dicts, lists, tuples, nn.Modules, ...).

    Tensor names are the leaves' pytree paths (``"layers.0.weight"``); the metadata holds
    the structure.  The data go to a temporary file next to ``path`` that replaces it only
    when complete, so a crash leaves the old file intact.

    >>> fg.save("model.safetensors", {"w": fg.ones(3)})
    """
    if not isinstance(path, (str, bytes, os.PathLike)) and isinstance(tree, (str, os.PathLike)):
        raise TypeError("fg.save(path, tree): the path comes first (torch.save takes the "
                        "object first); call fg.save(path, tree)")
    path = file_path(path, "fg.save")
    check_destination(path, "fg.save")
    names, description, _ = _names_and_structure(tree)
    if "__metadata__" in names:
        raise ValueError("fg.save: a tensor cannot be named '__metadata__' (safetensors "
                         "reserves that name for the file's header); rename that key")
    arrays, dtype_notes = {}, {}
    for name, leaf in zip(names, _tree.leaves(tree), strict=True):
        arrays[name], note = _encode(_host_array(name, leaf))
        if note is not None:
            dtype_notes[name] = note
    metadata = {"format": "np",
                _STRUCTURE_KEY: json.dumps(None if description is _Unencodable
                                           else {"root": description})}
    if dtype_notes:
        metadata[_DTYPES_KEY] = json.dumps(dtype_notes)

    def write(temporary):
        try:
            _safetensors_numpy.save_file(arrays, temporary, metadata=metadata)
        except safetensors.SafetensorError as error:  # a full disk, no permission, ...
            raise OSError(f"fg.save: writing {path!r} failed (through the temporary file "
                          f"{temporary!r}): {error}") from error

    write_atomically(path, write, who="fg.save")


def _read(path: str) -> tuple[dict, dict]:
    """The arrays (dtypes restored) and metadata of a safetensors file."""
    if not os.path.exists(path):
        raise FileNotFoundError(2, f"load: no such file: {path!r}", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, f"load: {path!r} is a directory, not a file", path)
    try:
        with safetensors.safe_open(path, framework="np") as f:
            metadata = dict(f.metadata() or {})
            for name in f.keys():
                code = f.get_slice(name).get_dtype()
                if code not in _READABLE:  # float8 and others NumPy lacks (AttributeError)
                    raise _Unreadable(f"load: {path!r}: tensor {name!r} has dtype {code}, "
                                      "which funcgrad has no tensors of; convert it (to "
                                      "float16/bfloat16/float32) with the tool that wrote it")
            arrays = {name: f.get_tensor(name) for name in f.keys()}
        notes = json.loads(metadata.get(_DTYPES_KEY, "{}"))
        structure = json.loads(metadata.get(_STRUCTURE_KEY, "null"))
    except _Unreadable as error:
        raise ValueError(str(error)) from None
    except (safetensors.SafetensorError, ValueError, TypeError, KeyError) as error:
        with open(path, "rb") as file:
            start = file.read(8)
        foreign = [kind for magic, kind in _FOREIGN.items() if start.startswith(magic)]
        if foreign:
            raise ValueError(f"load: {path!r} is not a safetensors file but {foreign[0]}; "
                             "fg.load reads safetensors files (convert a PyTorch state_dict "
                             "with safetensors.torch.save_file)") from None
        raise ValueError(f"load: {path!r} is not a valid safetensors file (truncated or "
                         f"corrupted?): {error}") from None
    try:
        for name, dtype_name in notes.items():
            if name in arrays:
                arrays[name] = _decode(arrays[name], dtype_name)
    except (ValueError, TypeError, AttributeError) as error:
        raise ValueError(f"load: {path!r} has damaged {_DTYPES_KEY!r} metadata (the dtypes "
                         f"safetensors cannot store): {error}") from None
    return arrays, {"structure": structure}


class _Unreadable(Exception):
    """A tensor of a dtype funcgrad lacks, found while reading a file."""


def load(path: str | os.PathLike, like: Any = None) -> Any:
    """Read a pytree of Tensors written by ``save`` (or any safetensors file).

    Arguments:
        path: the safetensors file.
        like: optional template pytree (e.g. a freshly built model): the result has its
            structure (nn.Modules included), and every leaf path, shape and dtype must
            match the file's, or a ValueError names the first mismatch.  Leaves go to the
            template leaf's device.  Without ``like``, dicts/lists/tuples are rebuilt from
            the file's metadata (other node types come back as dicts of their fields); a
            file without funcgrad metadata loads as a flat dict ``{name: Tensor}``.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file when
    it is truncated or corrupted.

    >>> fg.save("p.safetensors", {"w": fg.ones(2)})
    >>> fg.load("p.safetensors")
    {'w': tensor([1., 1.], dtype=float32)}
    """
    path = file_path(path, "load")
    arrays, info = _read(path)
    if like is None:
        structure = info["structure"]
        tensors = {name: tensor(a) for name, a in arrays.items()}
        if structure is None:
            return tensors
        try:
            return _rebuild(structure["root"], tensors)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"load: {path!r} has structure metadata that does not match its "
                             f"tensors ({error!r}); pass like= to load it") from None
    names, _, spec = _names_and_structure(like)
    leaves = []
    for name, template in zip(names, _tree.leaves(like), strict=True):
        if name not in arrays:
            raise ValueError(f"load: {path!r} has no tensor {name!r}, which like= expects; the "
                             f"file holds {sorted(arrays)[:20]}")
        array = arrays[name]
        shape, dtype = _spec_of(template)
        if tuple(array.shape) != shape or array.dtype != dtype:
            raise ValueError(f"load: {path!r}: {name!r} has shape {tuple(array.shape)} and "
                             f"dtype {array.dtype.name} in the file, but like= has shape "
                             f"{shape} and dtype {dtype.name}")
        device = template.device if isinstance(template, Tensor) else None
        leaves.append(tensor(array, device=device) if device is not None else tensor(array))
    extra = sorted(set(arrays) - set(names))
    if extra:
        raise ValueError(f"load: {path!r} holds tensors that like= has no place for: "
                         f"{extra[:20]} (like= expects {len(names)} tensors, the file has "
                         f"{len(arrays)})")
    return _tree.unflatten(spec, leaves)
