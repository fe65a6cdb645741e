import os
import random

# Ray, where a test starts it, stays on loopback: with this, Ray takes 127.0.0.1 as the node's
# address instead of the machine's own (read when ray is first imported, so set here, first).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import pytest


@pytest.fixture
def rng():
    return random.Random(1234)
