"""Fixtures shared by the security tests (least privilege, secrets, bad input)."""

from tests.operators.conftest import ti  # noqa: F401 - the same task-instance stand-in fixture
