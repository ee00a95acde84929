from tests.operators.conftest import ti  # noqa: F401 - the same task-instance stand-in fixture
