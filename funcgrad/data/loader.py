"""DataLoader: batches of a dataset, reshuffled every epoch, prepared in a background
thread.

>>> from funcgrad import data, random
>>> ds = data.ArrayDataset(np.arange(10.0), np.arange(10))
>>> loader = data.DataLoader(ds, batch_size=4, shuffle=True, key=random.key(0))
>>> len(loader), [x.shape for x, y in loader]
(3, [(4,), (4,), (2,)])
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import numpy as np

from funcgrad.core.tensor import Tensor, to_numpy_array, wrap
from funcgrad.data.dataset import ArrayDataset
from funcgrad.tree import keystr as tree_keystr

__all__ = ["DataLoader"]

_POLL_SECONDS = 0.1  # how often a blocked worker checks whether the consumer left


class DataLoader:
    """Iterate over ``dataset`` in batches: each batch is a tuple of batched Tensors.

    With ``shuffle=True`` epoch ``e`` visits the examples in the order
    ``random.permutation(random.fold_in(key, e), len(dataset))``, so every epoch has a
    new order and a run is reproducible from ``key``.  Each ``iter(loader)`` is one epoch
    (``loader.epoch`` counts them; ``set_epoch`` sets the next one, e.g. when resuming).

    Arguments:
        dataset: an ``ArrayDataset`` (batches are gathered with NumPy fancy indexing), or
            any object with ``__len__`` and ``__getitem__`` returning a tuple of arrays
            (examples are stacked) or a dict or other pytree of them (batches then have
            that structure).
        batch_size: examples per batch.
        shuffle: visit the examples in a new random order every epoch (needs ``key``).
        key: a ``random.key`` from which the epochs' orders are derived.
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        prefetch: batches prepared ahead in a background thread (0: no thread).

    >>> from funcgrad import data
    >>> loader = data.DataLoader(data.ArrayDataset(np.ones((5, 2))), batch_size=2,
    ...                          drop_last=True)
    >>> len(loader)
    2
    """

    def __init__(self, dataset, batch_size: int, shuffle: bool = False, key=None,
                 drop_last: bool = False, prefetch: int = 2):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        if isinstance(prefetch, bool) or not isinstance(prefetch, (int, np.integer)) \
                or prefetch < 0:
            raise ValueError(f"DataLoader: prefetch must be an int >= 0, got {prefetch!r}")
        if shuffle and key is None:
            raise ValueError("DataLoader: shuffle=True needs a key for the random order, "
                             "e.g. DataLoader(dataset, batch_size, shuffle=True, "
                             "key=random.key(0))")
        if key is not None:  # checked now, not at the first epoch
            from funcgrad.random import _check_key

            key = _check_key("DataLoader", key)
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.key = key
        self.drop_last = drop_last
        self.prefetch = int(prefetch)
        self.epoch = 0

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.drop_last:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter(loader)`` epoch number ``epoch`` (its shuffle order)."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) \
                or not 0 <= epoch < 2**32:
            raise ValueError(f"DataLoader.set_epoch: epoch must be an int in [0, 2**32) (it "
                             f"is folded into the key), got {epoch!r}")
        self.epoch = int(epoch)

    def _order(self, epoch: int) -> np.ndarray:
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        from funcgrad import random

        return np.asarray(random.permutation(random.fold_in(self.key, epoch), n))

    def _batches(self, order: np.ndarray) -> Iterator[tuple]:
        """The host arrays of each batch, in order: new arrays, which the batch's Tensors
        take over without copying."""
        # another dataset's gather may return views of its own storage: collated instead
        gather = self.dataset.gather if isinstance(self.dataset, ArrayDataset) else None
        for i in range(len(self)):
            indices = order[i * self.batch_size:(i + 1) * self.batch_size]
            if gather is not None:
                yield gather(indices)
            else:
                yield _collate([self.dataset[int(j)] for j in indices])

    def __iter__(self) -> Iterator[tuple]:
        order = self._order(self.epoch)
        self.epoch += 1
        host_batches = self._batches(order)
        if self.prefetch == 0:
            return (_as_tensors(batch) for batch in host_batches)
        return _prefetched(host_batches, self.prefetch)

    def __repr__(self) -> str:
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last}, "
                f"prefetch={self.prefetch})")


def _collate(examples: list):
    """Stack a list of examples into batched host arrays: a tuple of them for tuples and
    single arrays, the same structure for other pytrees (a dict of arrays gives a dict of
    batches, as PyTorch's default collation)."""
    from funcgrad import tree

    if not examples:
        return ()
    if not isinstance(examples[0], (tuple, dict, list)):
        examples = [(e,) for e in examples]
    pairs, structure = tree.flatten_with_path(examples[0])
    rows = [[leaf for _, leaf in pairs]]
    for example in examples[1:]:
        row, other = tree.flatten(example)
        if other != structure:
            raise ValueError(f"DataLoader: examples of one batch differ in structure: "
                             f"{structure} and {other}")
        rows.append(row)
    stacked = [_stack_field(path, column)
               for (path, _), column in zip(pairs, zip(*rows, strict=True), strict=True)]
    return tree.unflatten(structure, stacked)


def _stack_field(path: tuple, values) -> np.ndarray:
    """One field of a batch's examples stacked into a host array; Python numbers take
    funcgrad's dtypes (float32, int32), as ``fg.tensor`` of the same values."""
    field = f"field {tree_keystr(path)} of the examples" if path else "the examples"
    try:
        arrays = [v.numpy() if isinstance(v, Tensor) else to_numpy_array(v) for v in values]
    except (TypeError, ValueError, OverflowError) as error:
        raise type(error)(f"DataLoader: {field} cannot be batched: {error}") from None
    shapes = [a.shape for a in arrays]
    if len(set(shapes)) > 1:
        first = next(i for i, s in enumerate(shapes) if s != shapes[0])
        raise ValueError(f"DataLoader: {field} have different shapes within one batch: "
                         f"{shapes[0]} (batch position 0) and {shapes[first]} (position "
                         f"{first}); pad or crop them to one shape in the dataset, or use "
                         "batch_size=1")
    return np.stack(arrays)


def _as_tensors(batch):
    """A batch of new host arrays as Tensors over them (no copy: nothing else holds the
    arrays)."""
    from funcgrad import tree

    return tree.map(wrap, batch)


class _Done:
    """The end-of-epoch marker the worker sends."""


class _Failed:
    """An exception raised in the worker, to be re-raised in the consumer."""

    def __init__(self, error: BaseException):
        self.error = error


def _prefetched(host_batches: Iterator[tuple], depth: int) -> Iterator[tuple]:
    """Yield the batches of ``host_batches`` as Tensors, prepared ``depth`` ahead by a
    daemon thread.  Leaving the loop early (or the generator being collected) stops the
    worker, which never blocks for longer than ``_POLL_SECONDS`` without checking."""
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def send(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def work():
        try:
            for batch in host_batches:
                if not send(_as_tensors(batch)):
                    return
            send(_Done)
        except BaseException as error:  # noqa: BLE001 (handed to the consumer)
            send(_Failed(error))

    worker = threading.Thread(target=work, name="funcgrad-DataLoader", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is _Done:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        worker.join(timeout=5 * _POLL_SECONDS)
