"""pytest fixtures for the local cluster: a real kube-apiserver and official-client objects for it.

Registered as a pytest plugin (entry point ``pytest11``) by the ``airflow-trainjob-local`` distribution.
Nothing here starts a cluster unless a test requests a fixture that needs one, so pure unit tests stay pure.

The session-scoped :func:`local_cluster` brings the cluster up once per test run, reusing one that is already
up in the same state dir (e.g. started by CI with ``airflow-trainjob-local up``) and stopping it at the end only
if it started it. Environment variables, so that several people can run separate clusters on one machine:

``AIRFLOW_TRAINJOB_TEST_STATE_DIR``
    state dir of the test cluster; default: the command's default, so the cluster CI started is reused.
``AIRFLOW_TRAINJOB_TEST_PORT_BASE``
    apiserver port = N, etcd client = N+1, etcd peer = N+2, kubelet = N+3, TrainJob status server = N+4 (a
    private second cluster uses N+10..N+14, :func:`kubernetes_only_cluster` N+40..N+44); default: the ports of
    the last ``up`` in that state dir, else 26443.
``AIRFLOW_TRAINJOB_TEST_NO_WORKLOADS``
    ``1``: start Kubernetes only, without the local training controller and the process kubelet.
``AIRFLOW_TRAINJOB_TEST_NO_CLUSTER``
    ``1``: no cluster may be started or used (the unit tier, ``./scripts/test.sh --unit``): a test that reaches
    a cluster fixture fails, saying it lacks the ``cluster`` marker.

The ``cluster`` marker goes on every test whose fixtures reach a cluster: ``local_cluster``, ``spare_cluster``,
or any fixture named ``cluster_*`` or ``*_cluster`` (the convention for a module's private cluster, e.g.
``cluster_without_controller``, ``private_cluster``), so ``-m "not cluster"`` selects the tests that need none.
After each test marked ``alone`` (it may kill a component of the session cluster), any component of the session
cluster that is not running is started again, whether the test passed or failed.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_trainjob_local.constants import LOCAL_KEY_PREFIX

if TYPE_CHECKING:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports

#: Label on every namespace the ``namespace`` fixture creates, to find leftovers of interrupted runs.
TEST_NAMESPACE_LABEL = f"{LOCAL_KEY_PREFIX}/test"
#: Set to ``1`` to forbid clusters (the unit tier).
NO_CLUSTER_ENV = "AIRFLOW_TRAINJOB_TEST_NO_CLUSTER"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: the test uses the local cluster (set for every test that requests a cluster fixture)"
    )
    config.addinivalue_line(
        "markers",
        "alone: the test disrupts or observes the whole session cluster (restarts "
        "its kubelet, counts its watches): run it when no other test uses the cluster",
    )


def is_cluster_fixture(name: str) -> bool:
    """Whether the fixture ``name`` is (or starts) a cluster: ``local_cluster``, ``spare_cluster``, and by
    convention every ``cluster_*`` / ``*_cluster`` fixture."""
    return name.startswith("cluster_") or name.endswith("_cluster")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test that needs a cluster (through any fixture that reaches one, see :func:`is_cluster_fixture`),
    so that ``-m "not cluster"`` selects the tests that need none."""
    for item in items:
        if any(is_cluster_fixture(name) for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


def _refuse_in_unit_tier(what: str) -> None:
    if os.environ.get(NO_CLUSTER_ENV) == "1":
        pytest.fail(
            f"{what}: no cluster in this run (${NO_CLUSTER_ENV}=1, the unit tier); a test that needs one "
            f"must reach it through a fixture named local_cluster, spare_cluster, cluster_* or *_cluster, "
            f"which marks it 'cluster'",
            pytrace=False,
        )


def state_dir_from_env() -> Path | None:
    """``$AIRFLOW_TRAINJOB_TEST_STATE_DIR`` or ``None`` (the cluster's default state dir)."""
    value = os.environ.get("AIRFLOW_TRAINJOB_TEST_STATE_DIR")
    return Path(value) if value else None


def ports_from_env(offset: int = 0) -> Ports | None:
    """``Ports.from_base($AIRFLOW_TRAINJOB_TEST_PORT_BASE + offset)``, or ``None`` when the variable is unset.

    :raises pytest.UsageError: the variable is not an integer.
    """
    from airflow_trainjob_local.cluster import Ports

    value = os.environ.get("AIRFLOW_TRAINJOB_TEST_PORT_BASE")
    if not value:
        return None
    try:
        return Ports.from_base(int(value) + offset)
    except ValueError as e:
        raise pytest.UsageError(f"AIRFLOW_TRAINJOB_TEST_PORT_BASE must be an integer, got {value!r}") from e


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """The session's local cluster, up; stopped at the end only if this session started it."""
    from airflow_trainjob_local.cluster import LocalCluster

    _refuse_in_unit_tier("local_cluster")
    cluster = LocalCluster(
        state_dir_from_env(),
        ports_from_env(),
        workloads=os.environ.get("AIRFLOW_TRAINJOB_TEST_NO_WORKLOADS") != "1",
    )
    # Whoever started the apiserver owns the cluster (decided under up's lock); when reusing one, `up` still
    # starts any missing component but this session leaves the cluster running.
    owned = "kube-apiserver" in cluster.up()
    yield cluster
    if owned:
        cluster.down()


@pytest.fixture(autouse=True)
def _alone_tests_leave_the_cluster_whole(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test marked ``alone`` that uses the session cluster (it may kill or stop a component: the kubelet),
    start again whatever component is not running, whether the test passed or failed — so one failure cannot
    leave the next tests without a kubelet."""
    cluster = None
    if request.node.get_closest_marker("alone") is not None and "local_cluster" in request.fixturenames:
        cluster = request.getfixturevalue("local_cluster")
    yield
    if cluster is None:
        return
    missing = [c.name for c in cluster.status().components if not c.running and not c.note]
    if missing:
        print(f"after {request.node.nodeid}: starting again {', '.join(missing)}")
        cluster.up()


@contextmanager
def private_cluster(state_dir: Path, *, workloads: bool) -> Iterator[LocalCluster]:
    """A second cluster of the test's own, up: state in ``state_dir``, ports base+10..base+13; stopped (and its etcd
    data removed, its logs kept) on the way out. For module fixtures that change a cluster others must not see."""
    from airflow_trainjob_local.cluster import DEFAULT_PORT_BASE, LocalCluster, Ports

    _refuse_in_unit_tier("private_cluster")
    ports = ports_from_env(offset=10) or Ports.from_base(DEFAULT_PORT_BASE + 10)
    cluster = LocalCluster(state_dir, ports, workloads=workloads)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()
        shutil.rmtree(cluster.state_dir / "etcd", ignore_errors=True)


@pytest.fixture(scope="session")
def kubernetes_only_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A second cluster with Kubernetes and the job CRDs only (no training controller, no kubelet): state in a
    session temporary directory, ports base+40..base+43; started once for the session by the first test that needs
    it, stopped at the end. For tests whose jobs no controller may act on (a controller run by the test itself, a
    startup with no controller, a kind the cluster stops serving). A test that changes it puts it back as it
    found it (e.g. installs again a CRD it deleted), so the next module finds the same cluster."""
    from airflow_trainjob_local.cluster import DEFAULT_PORT_BASE, LocalCluster, Ports

    _refuse_in_unit_tier("kubernetes_only_cluster")
    ports = ports_from_env(offset=40) or Ports.from_base(DEFAULT_PORT_BASE + 40)
    cluster = LocalCluster(tmp_path_factory.mktemp("kubernetes-only") / "cluster", ports, workloads=False)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()
        shutil.rmtree(cluster.state_dir / "etcd", ignore_errors=True)


@pytest.fixture
def spare_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """A second, private cluster, NOT started: state in ``tmp_path``, ports base+10..base+13, Kubernetes only.

    For tests of the cluster's own lifecycle (up, idempotency, down). Always stopped at teardown.
    """
    from airflow_trainjob_local.cluster import DEFAULT_PORT_BASE, LocalCluster, Ports

    _refuse_in_unit_tier("spare_cluster")
    ports = ports_from_env(offset=10) or Ports.from_base(DEFAULT_PORT_BASE + 10)
    cluster = LocalCluster(tmp_path / "cluster", ports, workloads=False)
    yield cluster
    cluster.down()
    # etcd preallocates 64 MB of WAL; keep the logs for a failed test, not the data.
    shutil.rmtree(cluster.state_dir / "etcd", ignore_errors=True)


@pytest.fixture(scope="session")
def kubeconfig_path(local_cluster: LocalCluster) -> str:
    """Path of the cluster's admin kubeconfig."""
    return str(local_cluster.kubeconfig)


@pytest.fixture(scope="session")
def kube_api_client(local_cluster: LocalCluster) -> Iterator[client.ApiClient]:
    """An official-client ``ApiClient`` authenticated as the cluster admin (from the generated kubeconfig)."""
    api_client = local_cluster.api_client()
    yield api_client
    api_client.close()


@pytest.fixture(scope="session")
def core_v1(kube_api_client: client.ApiClient) -> client.CoreV1Api:
    from kubernetes import client

    return client.CoreV1Api(kube_api_client)


@pytest.fixture(scope="session")
def custom_objects(kube_api_client: client.ApiClient) -> client.CustomObjectsApi:
    from kubernetes import client

    return client.CustomObjectsApi(kube_api_client)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, core_v1: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace for one test (``t-<test name>-<random>``), deleted afterwards (without waiting)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={TEST_NAMESPACE_LABEL: "true"}))
    )
    yield name
    try:
        core_v1.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture
def service_account_api_client(
    local_cluster: LocalCluster, core_v1: client.CoreV1Api, namespace: str
) -> Iterator[Callable[[str], client.ApiClient]]:
    """Factory: ``make(name)`` creates ServiceAccount ``name`` in the test's namespace, with no bindings, and
    returns an ``ApiClient`` that authenticates with a token issued for it (TokenRequest, 10 minutes).

    For least-privilege tests: the account can do nothing until the test binds a Role to
    ``system:serviceaccount:<namespace>:<name>``.
    """
    from kubernetes import client

    made: list[client.ApiClient] = []

    def make(name: str) -> client.ApiClient:
        core_v1.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata={"name": name}))
        token = core_v1.create_namespaced_service_account_token(
            name,
            namespace,
            client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)),
        ).status.token
        api_client = local_cluster.api_client(token)
        made.append(api_client)
        return api_client

    yield make
    for api_client in made:
        api_client.close()
