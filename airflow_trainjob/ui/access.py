"""Who may see what: Airflow's auth manager decides for every ``/trainjob/api/*`` route.

The user is Airflow's own (:func:`airflow.api_fastapi.core_api.security.get_user`: the UI's ``_token`` cookie or an
``Authorization: Bearer`` token); without one a route answers 401. A task instance's job, and its logs, are shown
only to a user the auth manager lets read that DAG's task instances (``is_authorized_dag(GET, TASK_INSTANCE)``),
else 403 -- Airflow's own dependency, as its task instance routes use it. The jobs page lists only the jobs of DAGs
the user may read (``filter_authorized_dag_ids``) and whose task instances they may read.

Both work in the plugin's mounted app: they read the auth manager the api-server initialised
(:func:`airflow.api_fastapi.app.get_auth_manager`), not the app's state.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from airflow.models.dag import DagModel
from airflow.utils.session import create_session

__all__ = ["GetUserDep", "readable_dag_ids", "requires_task_instance_read"]

#: The dependency of the task instance routes: 401 without a user, 403 when the auth manager says the user may not
#: read the task instances of the request's ``dag_id`` (query parameter).
requires_task_instance_read = requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE)


def readable_dag_ids(user: BaseUser, dag_ids: Iterable[str]) -> set[str]:
    """The DAG ids among ``dag_ids`` whose task instances ``user`` may read: the auth manager's
    ``filter_authorized_dag_ids`` (per team, as Airflow's own listings call it), then ``is_authorized_dag`` with
    ``DagAccessEntity.TASK_INSTANCE`` for each one left. Reads the database (blocking: call it off the event loop).

    :param user: the request's user.
    :param dag_ids: the DAG ids of the jobs found.
    """
    wanted = set(dag_ids)
    if not wanted:
        return set()
    manager = get_auth_manager()
    with create_session() as session:
        teams = DagModel.get_dag_id_to_team_name_mapping(sorted(wanted), session=session)
    by_team: dict[str | None, set[str]] = defaultdict(set)
    for dag_id in wanted:
        by_team[teams.get(dag_id)].add(dag_id)
    allowed: set[str] = set()
    for team, group in by_team.items():
        allowed |= manager.filter_authorized_dag_ids(dag_ids=group, user=user, method="GET", team_name=team)
    return {
        dag_id
        for dag_id in allowed
        if manager.is_authorized_dag(
            method="GET",
            access_entity=DagAccessEntity.TASK_INSTANCE,
            details=DagDetails(id=dag_id, team_name=teams.get(dag_id)),
            user=user,
        )
    }
