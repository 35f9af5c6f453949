"""Session-wide test setup: check every eager primitive against its shape rule, and a
fast hypothesis profile."""

import pytest
from hypothesis import HealthCheck, settings

import funcgrad as fg

settings.register_profile(
    "funcgrad", max_examples=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("funcgrad")


@pytest.fixture(autouse=True, scope="session")
def _check_avals():
    """Every eager primitive's NumPy output must match its shape/dtype rule."""
    previous = fg.config.check_avals
    fg.config.update("check_avals", True)
    yield
    fg.config.update("check_avals", previous)
