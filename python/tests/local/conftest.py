"""Fixtures of the single-process tests."""
import socket

import pytest


@pytest.fixture
def free_port():
    """A TCP port of 127.0.0.1 free when asked (for a store the test's processes meet at)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
