"""Fixtures for the tests launched by torchrun: every rank runs the same tests
in the same order; "tcomms" is the default group, gloo a group of the same
ranks, the reference every result is compared with element by element."""
import os

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

import tcomms.torch  # noqa: E402,F401  registers the backend


def pytest_configure(config):
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tcomms")


@pytest.fixture(scope="session")
def gloo():
    if not dist.is_initialized():
        pytest.skip("launch with torchrun (python/run_tests.sh)")
    return dist.new_group(backend="gloo")


@pytest.fixture
def rank():
    return dist.get_rank()


@pytest.fixture
def size():
    return dist.get_world_size()
