"""The fixtures every test folder shares; their code is in ``support``."""

from support.hives import hive_copy  # noqa: F401  (a pytest fixture)
