"""Embedding lives in ``linear.py`` (a lookup is a one-hot linear map); re-exported here."""

from funcgrad.nn.linear import Embedding

__all__ = ["Embedding"]
