"""Optimizer tests that jit compile into a private cache directory, never the user's."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_compile_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("funcgrad-cache")))
        yield
