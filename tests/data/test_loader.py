"""ArrayDataset, DataLoader (batching, shuffling, prefetch thread) and the digits split."""

import threading
import time

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import data, random


def make(n=10):
    return data.ArrayDataset(np.arange(n * 2, dtype=np.float32).reshape(n, 2),
                             np.arange(n, dtype=np.int32))


def test_array_dataset_indexing_and_len():
    ds = make()
    x, y = ds[3]
    assert isinstance(x, fg.Tensor) and x.shape == (2,) and int(y) == 3
    xs, ys = ds[np.array([1, 4])]
    assert xs.shape == (2, 2) and ys.tolist() == [1, 4]
    assert len(ds) == 10
    assert data.ArrayDataset(fg.ones((3, 1)))[0][0].shape == (1,)


def test_array_dataset_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match=r"\(3, 2\).*\(4,\)"):
        data.ArrayDataset(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError):
        data.ArrayDataset()


@pytest.mark.parametrize("prefetch", [0, 2])
@pytest.mark.parametrize("drop_last,expected", [(False, [4, 4, 2]), (True, [4, 4])])
def test_batches_in_order(prefetch, drop_last, expected):
    loader = data.DataLoader(make(), batch_size=4, drop_last=drop_last, prefetch=prefetch)
    batches = list(loader)
    assert len(loader) == len(expected) == len(batches)
    assert [b[0].shape[0] for b in batches] == expected
    assert all(isinstance(t, fg.Tensor) for b in batches for t in b)
    assert batches[0][1].dtype == fg.int32 and batches[0][0].shape == (4, 2)
    labels = np.concatenate([np.asarray(b[1]) for b in batches])
    np.testing.assert_array_equal(labels, np.arange(len(labels)))


def test_shuffle_is_a_permutation_per_epoch_from_key_and_epoch():
    key = random.key(42)
    loader = data.DataLoader(make(20), batch_size=8, shuffle=True, key=key)
    epochs = [np.concatenate([np.asarray(y) for _, y in loader]) for _ in range(2)]
    for epoch, order in enumerate(epochs):
        np.testing.assert_array_equal(np.sort(order), np.arange(20))
        expected = np.asarray(random.permutation(random.fold_in(key, epoch), 20))
        np.testing.assert_array_equal(order, expected)
    assert not np.array_equal(epochs[0], epochs[1])
    # the same key reproduces the run; set_epoch resumes at an epoch
    again = data.DataLoader(make(20), batch_size=8, shuffle=True, key=key)
    again.set_epoch(1)
    np.testing.assert_array_equal(np.concatenate([np.asarray(y) for _, y in again]),
                                  epochs[1])
    # inputs and labels stay aligned
    for x, y in loader:
        np.testing.assert_array_equal(np.asarray(x)[:, 0], 2 * np.asarray(y))


def test_shuffle_needs_a_key():
    with pytest.raises(ValueError, match="key"):
        data.DataLoader(make(), batch_size=2, shuffle=True)
    with pytest.raises(ValueError, match="batch_size"):
        data.DataLoader(make(), batch_size=0)
    with pytest.raises(TypeError, match=r"expected a key .*random.key\(0\)"):  # not a seed
        data.DataLoader(make(), batch_size=2, shuffle=True, key=0)


class _Failing:
    """A generic dataset whose 5th example raises."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise RuntimeError("bad example 5")
        return np.full(2, i, dtype=np.float32), i


def test_generic_dataset_is_collated_and_worker_errors_reach_the_consumer():
    loader = data.DataLoader(_Failing(), batch_size=2)
    it = iter(loader)
    x, y = next(it)
    assert x.shape == (2, 2) and y.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="bad example 5"):
        list(it)


class _Records:
    """Examples as dicts (a tuple inside), as PyTorch datasets often give them."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"image": np.full((2, 2), i, np.float32), "pair": (i, np.float64(i) / 2)}


@pytest.mark.parametrize("prefetch", [0, 2])
def test_dict_examples_are_collated_into_dicts_of_batches(prefetch):
    batches = list(data.DataLoader(_Records(), batch_size=2, prefetch=prefetch))
    assert [sorted(b) for b in batches] == [["image", "pair"]] * 3
    first = batches[0]
    assert isinstance(first["image"], fg.Tensor) and first["image"].shape == (2, 2, 2)
    assert first["pair"][0].tolist() == [0, 1] and first["pair"][1].tolist() == [0.0, 0.5]
    assert batches[-1]["image"].shape == (1, 2, 2)


def test_examples_of_different_structure_in_one_batch_raise():
    class Mixed:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {"a": np.zeros(2)} if i == 0 else {"b": np.zeros(2)}

    with pytest.raises(ValueError, match="differ in structure"):
        list(data.DataLoader(Mixed(), batch_size=2, prefetch=0))


def test_abandoning_iteration_stops_the_worker():
    before = threading.active_count()
    loader = data.DataLoader(make(1000), batch_size=1, prefetch=2)
    for _ in range(3):
        for i, _batch in enumerate(loader):
            if i == 2:
                break
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


def test_len_of_dataset_not_divisible():
    assert len(data.DataLoader(make(10), batch_size=3)) == 4
    assert len(data.DataLoader(make(10), batch_size=3, drop_last=True)) == 3


def test_digits():
    pytest.importorskip("sklearn")
    train, test = data.datasets.digits()
    assert (len(train), len(test)) == (1437, 360)
    images, labels = train.arrays
    assert images.dtype == np.float32 and images.shape == (1437, 1, 8, 8)
    assert labels.dtype == np.int32 and set(np.unique(labels)) == set(range(10))
    assert images.min() == 0.0 and images.max() == 1.0
    # deterministic, and the two splits together are the whole dataset
    train2, test2 = data.datasets.digits()
    np.testing.assert_array_equal(train2.arrays[1], labels)
    all_images = np.concatenate([images, test.arrays[0]]).reshape(1797, -1)
    from sklearn.datasets import load_digits

    reference = load_digits().data.astype(np.float32) / 16
    assert sorted(map(bytes, all_images)) == sorted(map(bytes, reference))


def test_digits_without_sklearn_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sklearn(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError("No module named 'sklearn'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(ImportError, match=r"funcgrad\[data\]"):
        data.datasets.digits()


class _Items:
    """A dataset over a list of ready-made examples."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def test_python_numbers_batch_with_funcgrad_dtypes():
    # NumPy's stacking made them float64/int64, fed silently to float32 models
    x, y = next(iter(data.DataLoader(_Items([(1.0, 2), (3.0, 4)]), batch_size=2)))
    assert (x.dtype, y.dtype) == (fg.float32, fg.int32)
    ds = data.ArrayDataset([1.0, 2.0], [1, 2], np.zeros(2))
    assert [a.dtype for a in ds.arrays] == [np.float32, np.int32, np.float64]


def test_examples_that_cannot_be_batched_name_the_field():
    ragged = _Items([{"x": np.ones(3)}, {"x": np.ones(4)}])
    with pytest.raises(ValueError, match=r"field \['x'\] .*\(3,\) .*and \(4,\) \(position 1\)"):
        list(data.DataLoader(ragged, batch_size=2, prefetch=0))
    strings = _Items([("ab", 1), ("cd", 2)])
    with pytest.raises(TypeError, match=r"field \[0\] of the examples cannot be batched"):
        list(data.DataLoader(strings, batch_size=2, prefetch=0))


def test_set_epoch_range():
    loader = data.DataLoader(_Items([(1.0,)]), batch_size=1, shuffle=True, key=random.key(0))
    with pytest.raises(ValueError, match=r"epoch must be an int in \[0, 2\*\*32\)"):
        loader.set_epoch(2**32)
    loader.set_epoch(2**32 - 1)
    assert next(iter(loader))[0].tolist() == [1.0]


def test_gathered_batches_are_fresh_aligned_arrays():
    x = np.arange(24.0).reshape(6, 4)
    ds = data.ArrayDataset(x, np.arange(6))
    gx, gy = ds.gather(np.array([5, -1, 0]))
    np.testing.assert_array_equal(gx, x[[5, 5, 0]])
    assert not np.shares_memory(gx, ds.arrays[0]) and gx.ctypes.data % 64 == 0
    with pytest.raises(IndexError, match="index 6 is out of range for 6 examples"):
        ds.gather(np.array([0, 6]))
    (xb, yb), = data.DataLoader(ds, batch_size=6)
    xb_host = xb.numpy()
    assert not np.shares_memory(xb_host, ds.arrays[0])
    np.testing.assert_array_equal(xb_host, x)


def test_big_endian_arrays_become_native_tensors():
    # fg.tensor raised "unsupported dtype dtype('>f4')" (JAX takes them)
    t = fg.tensor(np.arange(3, dtype=">f4"))
    assert t.dtype == fg.float32 and (t + 1).tolist() == [1.0, 2.0, 3.0]
    (xb,), = data.DataLoader(data.ArrayDataset(np.arange(4, dtype=">i4")), batch_size=4)
    assert xb.dtype == fg.int32 and xb.tolist() == [0, 1, 2, 3]
