"""fg.save / fg.load: round trips, structure, validation against like=, atomic writes."""

import collections
import dataclasses
import json

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy

import funcgrad as fg
from funcgrad import tree


@tree.register_dataclass
@dataclasses.dataclass(frozen=True)
class Linear:  # stands in for an nn.Module: a registered node with named fields
    weight: object
    bias: object
    activation: str = dataclasses.field(default="relu", metadata={"static": True})


def params():
    rng = np.random.default_rng(0)
    return {"layers": [Linear(fg.tensor(rng.normal(size=(3, 2)).astype(np.float32)),
                              fg.zeros(3))],
            "scale": fg.tensor(2.0), "steps": fg.tensor(7, dtype=fg.int32),
            "pair": (fg.ones(2, dtype=fg.float64), None)}


def assert_same(a, b):
    assert tree.structure(a) == tree.structure(b)
    for x, y in zip(tree.leaves(a), tree.leaves(b), strict=True):
        assert isinstance(y, fg.Tensor) and x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_round_trip_with_like(tmp_path):
    p = params()
    fg.save(tmp_path / "p.safetensors", p)
    assert_same(p, fg.load(tmp_path / "p.safetensors", like=p))


def test_tensor_names_are_readable_paths(tmp_path):
    fg.save(tmp_path / "p.safetensors", params())
    with safetensors.safe_open(tmp_path / "p.safetensors", framework="np") as f:
        names = set(f.keys())
    assert names == {"layers.0.weight", "layers.0.bias", "scale", "steps", "pair.0"}


def test_load_without_like_rebuilds_containers(tmp_path):
    nt = collections.namedtuple("NT", "a b")
    t = {"a": [fg.ones(2), (fg.zeros(()), None)], 3: fg.tensor([1, 2]), "n": nt(fg.ones(1), 5)}
    fg.save(tmp_path / "t.safetensors", t)
    out = fg.load(tmp_path / "t.safetensors")
    assert isinstance(out["a"], list) and isinstance(out["a"][1], tuple)
    assert out["a"][1][1] is None and out["a"][1][0].shape == ()
    assert out[3].tolist() == [1, 2]
    assert set(out["n"]) == {"a", "b"}  # other node types come back as dicts of fields
    assert int(out["n"]["b"]) == 5
    # registered nodes too, keyed by field name
    p = params()
    fg.save(tmp_path / "p.safetensors", p)
    loaded = fg.load(tmp_path / "p.safetensors")
    np.testing.assert_array_equal(np.asarray(loaded["layers"][0]["weight"]),
                                  np.asarray(p["layers"][0].weight))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64", "int8", "uint32", "bool",
                                   "complex64", "complex128"])
def test_dtypes_round_trip(tmp_path, dtype):
    x = fg.tensor((np.arange(6).reshape(2, 3) % 3).astype(np.dtype(getattr(fg, dtype + (
        "_" if dtype == "bool" else "")))))
    fg.save(tmp_path / "x.safetensors", {"x": x})
    for out in (fg.load(tmp_path / "x.safetensors")["x"],
                fg.load(tmp_path / "x.safetensors", like={"x": x})["x"]):
        assert out.dtype == x.dtype and out.shape == x.shape
        np.testing.assert_array_equal(np.asarray(out), np.asarray(x))


def test_bfloat16_is_stored_natively(tmp_path):
    fg.save(tmp_path / "b.safetensors", {"w": fg.ones(3, dtype=fg.bfloat16)})
    with safetensors.safe_open(tmp_path / "b.safetensors", framework="np") as f:
        assert f.get_slice("w").get_dtype() == "BF16"  # readable by PyTorch as bfloat16


def test_like_mismatches_name_the_path(tmp_path):
    p = params()
    fg.save(tmp_path / "p.safetensors", p)
    bigger = tree.map(lambda x: x, p)
    bigger["layers"][0] = Linear(fg.zeros((4, 2)), fg.zeros(3))
    with pytest.raises(ValueError, match=r"layers\.0\.weight.*\(3, 2\).*\(4, 2\)"):
        fg.load(tmp_path / "p.safetensors", like=bigger)
    wrong_dtype = dict(p, scale=fg.tensor(2.0, dtype=fg.float64))
    with pytest.raises(ValueError, match=r"'scale'.*float32.*float64"):
        fg.load(tmp_path / "p.safetensors", like=wrong_dtype)
    with pytest.raises(ValueError, match="'extra'"):
        fg.load(tmp_path / "p.safetensors", like=dict(p, extra=fg.ones(1)))
    with pytest.raises(ValueError, match="no place"):
        fg.load(tmp_path / "p.safetensors", like={"scale": fg.tensor(2.0)})


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        fg.load(tmp_path / "nope.safetensors")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupted_file_raises_value_error_naming_it(tmp_path, damage):
    path = tmp_path / "p.safetensors"
    fg.save(path, params())
    raw = path.read_bytes()
    path.write_bytes({"truncate": raw[: len(raw) - 10], "garbage": b"\x00" * 3 + raw[3:],
                      "empty": b""}[damage])
    with pytest.raises(ValueError, match="p.safetensors"):
        fg.load(path)


@pytest.mark.parametrize("note", ['{"w": "no_such_dtype"}', '{"w": ["list"]}',
                                  '{"w": "float64"}'])
def test_damaged_dtype_metadata_raises_value_error_naming_the_file(tmp_path, note):
    # the dtypes safetensors cannot store (bfloat16 aside) are noted in the metadata; a
    # damaged note raised NumPy's bare errors
    path = tmp_path / "p.safetensors"
    safetensors.numpy.save_file({"w": np.zeros((2, 3), np.uint8)}, str(path),
                                metadata={"funcgrad.dtypes": note})
    with pytest.raises(ValueError, match="p.safetensors.*damaged"):
        fg.load(path)


def test_failed_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "p.safetensors"
    old = {"w": fg.ones(3)}
    fg.save(path, old)
    before = path.read_bytes()

    def crash_mid_write(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.numpy, "save_file", crash_mid_write)
    with pytest.raises(OSError, match="disk full"):
        fg.save(path, {"w": fg.zeros(3)})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["p.safetensors"]  # no temporary left
    monkeypatch.undo()
    np.testing.assert_array_equal(np.asarray(fg.load(path, like=old)["w"]), np.ones(3))


def test_foreign_file_loads_as_flat_dict(tmp_path):
    safetensors.numpy.save_file({"encoder.weight": np.ones((2, 2), np.float32)},
                                tmp_path / "foreign.safetensors")
    out = fg.load(tmp_path / "foreign.safetensors")
    assert list(out) == ["encoder.weight"] and out["encoder.weight"].shape == (2, 2)


def test_metadata_holds_the_structure(tmp_path):
    fg.save(tmp_path / "p.safetensors", {"a": [fg.ones(1)]})
    with safetensors.safe_open(tmp_path / "p.safetensors", framework="np") as f:
        structure = json.loads(f.metadata()["funcgrad.structure"])
    assert structure == {"root": {"dict": [["a", {"list": [{"leaf": "a.0"}]}]]}}


def test_name_collisions_and_non_array_leaves_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="a.b"):
        fg.save(tmp_path / "x.safetensors", {"a.b": fg.ones(1), "a": {"b": fg.ones(1)}})
    with pytest.raises(TypeError, match="'name'"):
        fg.save(tmp_path / "x.safetensors", {"name": "hello"})


def test_save_refuses_the_reserved_name_and_a_missing_directory(tmp_path):
    with pytest.raises(ValueError, match="__metadata__"):
        fg.save(tmp_path / "m.safetensors", {"__metadata__": fg.ones(1)})
    target = tmp_path / "missing" / "m.safetensors"
    with pytest.raises(FileNotFoundError, match="missing"):
        fg.save(target, {"a": fg.ones(1)})
    assert not (tmp_path / "missing").exists()


def test_save_to_a_directory_names_it_and_leaves_no_temporary(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory; pass the path of a file"):
        fg.save(tmp_path, {"a": fg.ones(1)})
    assert list(tmp_path.parent.glob(f".{tmp_path.name}*")) == []


def test_saved_files_get_the_permissions_open_would_give(tmp_path):
    # safetensors writes 0600 files: a saved model was unreadable to the group
    import os

    previous = os.umask(0o022)
    try:
        path = tmp_path / "m.safetensors"
        fg.save(path, {"w": fg.ones(2)})
        assert os.stat(path).st_mode & 0o777 == 0o644
        os.chmod(path, 0o640)  # an existing file keeps its own
        fg.save(path, {"w": fg.zeros(2)})
        assert os.stat(path).st_mode & 0o777 == 0o640
    finally:
        os.umask(previous)


def test_save_with_torch_argument_order_says_so(tmp_path):
    with pytest.raises(TypeError, match=r"the path comes first"):
        fg.save({"w": fg.ones(2)}, tmp_path / "m.safetensors")


def test_long_file_names_save(tmp_path):
    # the temporary's name added 18 characters: names of 238..255 bytes failed to save
    path = tmp_path / ("a" * 236 + ".st")
    fg.save(path, {"a": fg.ones(2)})
    np.testing.assert_array_equal(fg.load(path)["a"], [1.0, 1.0])


@pytest.mark.parametrize("array", [np.array(["ab", "c"]), np.ones(2, np.longdouble),
                                   np.array([1, "a"], object),
                                   np.ones(2, ml_dtypes.float8_e4m3fn)],
                         ids=["str", "longdouble", "object", "float8"])
def test_save_refuses_dtypes_load_could_not_read_back(tmp_path, array):
    # the file was written, and fg.load then failed on it: a checkpoint never restorable
    with pytest.raises(TypeError, match=r"leaf at 'x' has dtype .* funcgrad has no tensors"):
        fg.save(tmp_path / "x.st", {"x": array})
    assert list(tmp_path.iterdir()) == []


def test_big_endian_arrays_round_trip(tmp_path):
    fg.save(tmp_path / "b.st", {"x": np.arange(3, dtype=">f4")})
    out = fg.load(tmp_path / "b.st")["x"]
    assert out.dtype == fg.float32 and out.tolist() == [0.0, 1.0, 2.0]


def _handmade_file(path, dtype_code, data):
    header = json.dumps({"x": {"dtype": dtype_code, "shape": [len(data)],
                               "data_offsets": [0, len(data)]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + data)


def test_load_of_a_float8_tensor_names_it(tmp_path):
    # was AttributeError: module 'numpy' has no attribute 'float8_e4m3fn'
    _handmade_file(tmp_path / "f8.st", "F8_E4M3", b"\x38\x38")
    with pytest.raises(ValueError, match=r"tensor 'x' has dtype F8_E4M3"):
        fg.load(tmp_path / "f8.st")


def test_load_of_a_torch_zip_file_says_what_it_is(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "model.pt", "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02")
    with pytest.raises(ValueError, match=r"not a safetensors file but a zip archive"):
        fg.load(tmp_path / "model.pt")


def test_bytes_empty_and_directory_paths(tmp_path):
    path = bytes(tmp_path / "b.st")
    fg.save(path, {"a": fg.ones(1)})  # was TypeError: Can't mix strings and bytes
    assert fg.load(path)["a"].tolist() == [1.0]
    with pytest.raises(ValueError, match="the path is empty"):
        fg.save("", {"a": fg.ones(1)})
    with pytest.raises(IsADirectoryError, match="ends with a separator"):
        fg.save(f"{tmp_path}/x.st/", {"a": fg.ones(1)})


def test_write_failures_are_os_errors_naming_the_path(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise safetensors.SafetensorError("No space left on device (os error 28)")

    monkeypatch.setattr(safetensors.numpy, "save_file", failing)
    with pytest.raises(OSError, match=r"writing '.*m\.st' failed.*No space left"):
        fg.save(tmp_path / "m.st", {"a": fg.ones(1)})
    assert list(tmp_path.iterdir()) == []


def test_save_inside_a_transformation_says_so(tmp_path):
    def step(x):
        fg.save(tmp_path / "x.st", {"x": x})
        return x

    with pytest.raises(TypeError, match="cannot run inside jit, grad or vmap"):
        fg.jit(step)(fg.ones(2))
    assert not (tmp_path / "x.st").exists()
