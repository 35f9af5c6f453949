"""funcgrad.data: datasets of host arrays and a prefetching, reshuffling DataLoader.

>>> from funcgrad import data, random
>>> train, test = data.datasets.digits()
>>> loader = data.DataLoader(train, batch_size=64, shuffle=True, key=random.key(0))
>>> images, labels = next(iter(loader))
>>> images.shape, labels.dtype
((64, 1, 8, 8), dtype('int32'))
"""

from funcgrad.data import datasets
from funcgrad.data.dataset import ArrayDataset
from funcgrad.data.loader import DataLoader

__all__ = ["ArrayDataset", "DataLoader", "datasets"]
