"""An auth manager for end-to-end tests in which a user may be denied some DAGs.

Airflow's :class:`~airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager` decides by role
alone: every role, down to ``viewer``, may read every DAG. A real deployment denies DAGs per user -- the FAB auth
manager through per-DAG permissions (``can_read`` on ``DAG:<dag_id>``), Keycloak through its resource policies --
and the provider's UI must honour that through the auth manager's ``is_authorized_dag`` (and the batch and filter
methods built on it). To test that with a user who may NOT read a DAG, this subclass keeps the simple auth
manager's users, passwords, login form and tokens, and overrides only the DAG authorization: a user named in the
configuration may reach only the DAG ids listed for them; everyone else is decided by the simple auth manager.

Configuration (read in the api-server's process, like any Airflow option)::

    [core]
    auth_manager = tests.support.auth_manager.DagLimitedAuthManager

    [trainjob_test_auth]
    # JSON: user name -> the DAG ids that user may reach (read or edit, as their role allows)
    dag_access = {"viewer": ["allowed_dag"]}

or ``AIRFLOW__TRAINJOB_TEST_AUTH__DAG_ACCESS='{"viewer": ["allowed_dag"]}'``; ``tests.support.deployment`` sets it
from its ``dag_access`` argument. The api-server must be able to import ``tests`` (the repository root on
``PYTHONPATH``).
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import TYPE_CHECKING

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
from airflow.configuration import conf

if TYPE_CHECKING:
    from airflow.api_fastapi.auth.managers.base_auth_manager import ResourceMethod
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

#: The config section and key holding the JSON map of user name -> allowed DAG ids.
SECTION = "trainjob_test_auth"
KEY = "dag_access"


def parse_dag_access(value: str) -> dict[str, frozenset[str]]:
    """Parse the ``[trainjob_test_auth] dag_access`` option.

    :param value: JSON object mapping a user name to a list of DAG ids; empty means nobody is limited.
    :returns: user name -> the DAG ids that user may reach.
    :raises ValueError: the value is not such a JSON object.
    """
    if not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as e:
        raise ValueError(f"[{SECTION}] {KEY} must be a JSON object of user -> list of DAG ids: {e}") from e
    if not isinstance(parsed, dict) or not all(
        isinstance(user, str) and isinstance(dag_ids, list) and all(isinstance(d, str) for d in dag_ids)
        for user, dag_ids in parsed.items()
    ):
        raise ValueError(f"[{SECTION}] {KEY} must be a JSON object of user -> list of DAG ids, got {value!r}")
    return {user: frozenset(dag_ids) for user, dag_ids in parsed.items()}


class DagLimitedAuthManager(SimpleAuthManager):
    """The simple auth manager, with users that may be limited to some DAG ids (see the module docstring)."""

    @cached_property
    def dag_access(self) -> dict[str, frozenset[str]]:
        """User name -> allowed DAG ids, from ``[trainjob_test_auth] dag_access``; users not named are not limited."""
        return parse_dag_access(conf.get(SECTION, KEY, fallback=""))

    def is_authorized_dag(
        self,
        *,
        method: ResourceMethod,
        user: SimpleAuthManagerUser,
        access_entity: DagAccessEntity | None = None,
        details: DagDetails | None = None,
    ) -> bool:
        """The simple auth manager's decision, and for a limited user also: the DAG is one of theirs.

        A request about no DAG in particular (``details`` or its ``id`` is None, e.g. listing DAGs) is left to the
        role: Airflow then filters the listing through :meth:`filter_authorized_dag_ids`, which asks per DAG id.
        """
        allowed = self.dag_access.get(user.get_name())
        if allowed is not None and details is not None and details.id is not None and details.id not in allowed:
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)
