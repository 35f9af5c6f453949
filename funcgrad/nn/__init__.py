"""funcgrad.nn: neural-network layers as frozen pytrees (Equinox-style modules with
PyTorch's layer conventions), plus ``nn.functional`` and ``nn.init``.

>>> import funcgrad as fg
>>> from funcgrad import nn
>>> k1, k2 = fg.random.split(fg.random.key(0))
>>> model = nn.Sequential(nn.Linear(4, 16, key=k1), nn.ReLU(), nn.Linear(16, 2, key=k2))
>>> loss = lambda m, x: (m(x) ** 2).mean()
>>> grads = fg.grad(loss)(model, fg.ones((8, 4)))   # a model-shaped gradient
"""

from funcgrad.nn import functional, init
from funcgrad.nn.activation import (
    ELU,
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from funcgrad.nn.attention import MultiheadAttention
from funcgrad.nn.conv import Conv1d, Conv2d, ConvTranspose2d
from funcgrad.nn.dropout import Dropout
from funcgrad.nn.linear import Embedding, Flatten, Linear
from funcgrad.nn.module import Identity, Module, Sequential, parameters
from funcgrad.nn.normalization import BatchNorm, BatchNormState, LayerNorm, RMSNorm
from funcgrad.nn.pooling import AvgPool2d, MaxPool2d
from funcgrad.nn.recurrent import GRUCell, LSTMCell

__all__ = [
    "ELU", "GELU", "AvgPool2d", "BatchNorm", "BatchNormState", "Conv1d", "Conv2d",
    "ConvTranspose2d", "Dropout", "Embedding", "Flatten", "GRUCell", "Identity", "LSTMCell",
    "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MaxPool2d", "Module",
    "MultiheadAttention", "RMSNorm", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax",
    "Softplus", "Tanh", "functional", "init", "parameters",
]
