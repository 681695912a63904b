"""The fixtures every test folder shares; their code is in ``support``."""

import pytest
from support.hives import hive_copy  # noqa: F401  (a pytest fixture)

from moczarr_store import state


@pytest.fixture(autouse=True)
def fresh_process_state():
    """Each test starts with none of the process state (kept spans, watches, parsed
    documents) an earlier test left, and lets its own go."""
    yield
    state.reset()
