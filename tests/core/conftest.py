import math

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("core", max_examples=60, deadline=None)
settings.load_profile("core")

TWO_PI = 2.0 * math.pi


def pytest_collection_modifyitems(items):
    """The core promises no floating-point warnings for any input: make them failures."""
    for item in items:
        if "tests/core/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings("error::RuntimeWarning"))


def random_unit(rng, n):
    u = rng.normal(size=(n, 3))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


#: magnitudes covering every region of the conversions: 0, tiny, pi, the shells, far out
REGION_ANGLES = np.array(
    [
        0.0,
        1e-300,
        1e-12,
        1e-6,
        1e-3,
        0.01,
        0.5,
        math.pi - 1e-9,
        math.pi,
        math.pi + 1e-9,
        3.0,
        TWO_PI - 1e-6,
        TWO_PI - 1e-12,
        TWO_PI + 1e-9,
        10.0,
        50.0,
        100 * math.pi,
    ]
)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def region_vectors(rng):
    u = random_unit(rng, 40)
    return (REGION_ANGLES[:, None, None] * u[None]).reshape(-1, 3)
