"""Start, check and stop the local cluster's processes: etcd, kube-apiserver, kube-controller-manager, the
local training controller and the process kubelet.

Everything binds to 127.0.0.1 and lives in one state directory (default
``${XDG_STATE_HOME:-~/.local/state}/airflow-trainjob/cluster``)::

    cluster.json        ports and node name of the last ``up`` (``down``/``status`` read them from here)
    kubeconfig          admin kubeconfig (mode 0600: it holds the admin token)
    pki/                CA, serving certificates (apiserver, TrainJob status server), tokens.csv, service-account
                        key, the controller-manager's kubeconfig
    etcd/               etcd's data (kept across down/up; ``down(purge=True)`` deletes the whole directory)
    kubelet/            the process kubelet's own state
    logs/<name>.log     each component's stdout and stderr
    run/<name>.pid      each component's pid

The components are a table (:meth:`LocalCluster.components`): a name, an argv, and for the Python ones the
module that must exist — a workload module that is not written yet is skipped with a warning. Each process runs
in its own session, so it outlives the command that started it and a terminal's Ctrl-C does not reach it.
"""

from __future__ import annotations

import base64
import fcntl
import importlib.util
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, astuple, dataclass, field
from pathlib import Path

import yaml

from airflow_trainjob_local import build, crds, pki, port_reservation

#: Default ports: apiserver = base, etcd client = base + 1, etcd peer = base + 2, kubelet = base + 3, the
#: controller's TrainJob status server = base + 4. Chosen away from every Kubernetes and etcd default (6443,
#: 2379/2380, 10250) and below Linux's ephemeral range.
DEFAULT_PORT_BASE = 26443
#: How many consecutive ports a cluster uses (base .. base + 4).
PORT_BLOCK = 5
#: The status server's port is the apiserver's plus this.
STATUS_SERVER_OFFSET = 4
DEFAULT_NODE_NAME = "airflow-trainjob-local"
CLUSTER_NAME = "airflow-trainjob-local"
#: ClusterIP range of Services (only allocated, never routed: there is no kube-proxy).
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
#: Seconds to wait for etcd's /health and the apiserver's /readyz after start (first start bootstraps RBAC).
READY_TIMEOUT = 90.0
#: Seconds a workload process must survive after start to count as started.
WORKLOAD_GRACE = 1.5
#: Seconds ``down`` waits after SIGTERM before SIGKILL, per component.
STOP_TIMEOUT = 15.0
#: Seconds ``down`` gives kube-apiserver after SIGTERM (see its entry in :meth:`LocalCluster.components`).
APISERVER_STOP_TIMEOUT = 5.0
#: Seconds ``down`` waits, once a component's main thread has exited, for the kernel to finish tearing the rest
#: of it down (its other threads, its sockets): 20-40 ms measured on an idle machine, about 1 s on a loaded one.
TEARDOWN_TIMEOUT = 10.0


class ClusterError(RuntimeError):
    """A component could not start (port taken, process exited, never ready) or the state dir is inconsistent."""


@dataclass(frozen=True)
class Ports:
    """TCP ports on 127.0.0.1."""

    apiserver: int
    etcd_client: int
    etcd_peer: int
    kubelet: int

    @classmethod
    def from_base(cls, base: int) -> Ports:
        """apiserver = base, etcd client = base + 1, etcd peer = base + 2, kubelet = base + 3 (and the status
        server base + 4, :attr:`status_server`)."""
        return cls(apiserver=base, etcd_client=base + 1, etcd_peer=base + 2, kubelet=base + 3)

    @property
    def status_server(self) -> int:
        """The TrainJob status server of the controller: apiserver + 4 (derived, so a saved ``cluster.json`` of
        an older cluster still reads)."""
        return self.apiserver + STATUS_SERVER_OFFSET


@dataclass(frozen=True)
class Component:
    """One process of the cluster.

    :param name: also the name of its log and pid files.
    :param argv: the command line.
    :param ports: ports it listens on; ``up`` reserves them before it starts any component.
    :param module: for a Python component, the module ``argv`` runs; the component is skipped while the module
        does not exist.
    :param workload: part of the training workload (controller, kubelet) rather than Kubernetes itself;
        ``LocalCluster(workloads=False)`` (``--no-workloads``) leaves these out.
    :param ready: returns True once the component serves; ``None``: started once it is alive
        :data:`WORKLOAD_GRACE` seconds after start.
    :param after_ready: run once the component is ready, whether just started or already running.
    :param stop_timeout: seconds to wait after SIGTERM before SIGKILL when that is shorter than the caller's
        (``down``'s ``timeout``); ``None``: the caller's.
    """

    name: str
    argv: tuple[str, ...]
    ports: tuple[int, ...] = ()
    module: str | None = None
    workload: bool = False
    ready: Callable[[], bool] | None = field(default=None, compare=False)
    after_ready: Callable[[], None] | None = field(default=None, compare=False)
    stop_timeout: float | None = None


@dataclass(frozen=True)
class ComponentStatus:
    """One component as :meth:`LocalCluster.status` found it."""

    name: str
    running: bool
    pid: int | None
    log: Path
    #: Set when the component cannot run at all (its module is not written yet); it then does not count.
    note: str = ""


@dataclass(frozen=True)
class ClusterStatus:
    """What :meth:`LocalCluster.status` reports."""

    components: list[ComponentStatus]
    #: The apiserver answered ``/readyz`` with ``ok``.
    apiserver_ready: bool
    server: str
    kubeconfig: Path

    @property
    def healthy(self) -> bool:
        """Every component that can run is running and the apiserver is ready."""
        return self.apiserver_ready and all(c.running for c in self.components if not c.note)


def default_state_dir() -> Path:
    """``${XDG_STATE_HOME:-~/.local/state}/airflow-trainjob/cluster``."""
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg).expanduser() / "airflow-trainjob" / "cluster"


class LocalCluster:
    """A local cluster in one state directory.

    :param state_dir: default :func:`default_state_dir`.
    :param ports: default: the ports of the last ``up`` in this state dir, else ``Ports.from_base(26443)``.
    :param node_name: the Node the process kubelet registers.
    :param workloads: also start the local training controller and the process kubelet.
    :param feature_gates: the controller's ``--feature-gates`` (e.g. ``TrainJobStatus=false``); default: its own
        defaults (``TrainJobStatus`` on).
    """

    def __init__(
        self,
        state_dir: Path | str | None = None,
        ports: Ports | None = None,
        *,
        node_name: str | None = None,
        workloads: bool = True,
        feature_gates: str | None = None,
    ) -> None:
        self.state_dir = Path(state_dir or default_state_dir()).expanduser().absolute()
        saved = self._saved()
        self.ports = ports or (Ports(**saved["ports"]) if saved else Ports.from_base(DEFAULT_PORT_BASE))
        self.node_name = node_name or (saved or {}).get("node_name") or DEFAULT_NODE_NAME
        self.workloads = workloads
        self.feature_gates = feature_gates

    # --- paths -------------------------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (written by :meth:`up`)."""
        return self.state_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def ca_cert(self) -> Path:
        return pki.credential_paths(self.state_dir / "pki").ca_cert

    def log_path(self, name: str) -> Path:
        return self.state_dir / "logs" / f"{name}.log"

    def pid_path(self, name: str) -> Path:
        return self.state_dir / "run" / f"{name}.pid"

    # --- Airflow connection ------------------------------------------------------------------------------

    def airflow_connection(self, namespace: str = "default") -> str:
        """The JSON form of an Airflow ``kubernetes`` connection that uses the admin kubeconfig.

        Its extras are the ones the cncf.kubernetes ``KubernetesHook`` reads: ``kube_config_path``, ``namespace``.
        """
        extra = {"kube_config_path": str(self.kubeconfig), "namespace": namespace}
        return json.dumps({"conn_type": "kubernetes", "extra": extra})

    def env_line(self, namespace: str = "default") -> str:
        """``export AIRFLOW_CONN_KUBERNETES_DEFAULT='...'``: a shell line pointing ``kubernetes_default`` here."""
        return f"export AIRFLOW_CONN_KUBERNETES_DEFAULT={shlex.quote(self.airflow_connection(namespace))}"

    # --- the component table -----------------------------------------------------------------------------

    def components(self, binaries: build.KubernetesBinaries | None = None) -> list[Component]:
        """The processes of the cluster in start order (``down`` stops them in reverse).

        :param binaries: needed only to build argv for starting; without it argv names the binaries by name.
        """
        p, sd = self.ports, self.state_dir
        creds = pki.credential_paths(self.state_dir / "pki")
        apiserver = str(binaries.kube_apiserver) if binaries else "kube-apiserver"
        kcm = str(binaries.kube_controller_manager) if binaries else "kube-controller-manager"
        etcd = str(binaries.etcd) if binaries else "etcd"
        python = sys.executable
        return [
            Component(
                "etcd",
                (
                    etcd,
                    f"--name={CLUSTER_NAME}",
                    f"--data-dir={sd / 'etcd'}",
                    f"--listen-client-urls=http://127.0.0.1:{p.etcd_client}",
                    f"--advertise-client-urls=http://127.0.0.1:{p.etcd_client}",
                    f"--listen-peer-urls=http://127.0.0.1:{p.etcd_peer}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{p.etcd_peer}",
                    f"--initial-cluster={CLUSTER_NAME}=http://127.0.0.1:{p.etcd_peer}",
                    "--logger=zap",
                    "--log-outputs=stderr",
                    "--log-level=warn",
                ),
                ports=(p.etcd_client, p.etcd_peer),
                ready=self._etcd_healthy,
            ),
            Component(
                "kube-apiserver",
                (
                    apiserver,
                    f"--etcd-servers=http://127.0.0.1:{p.etcd_client}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    f"--secure-port={p.apiserver}",
                    # 1.20 still has an insecure port by default; 0 turns it off.
                    "--insecure-port=0",
                    f"--cert-dir={sd / 'pki' / 'apiserver-generated'}",
                    f"--tls-cert-file={creds.serving_cert}",
                    f"--tls-private-key-file={creds.serving_key}",
                    f"--token-auth-file={creds.token_file}",
                    "--authorization-mode=RBAC",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    f"--service-account-key-file={creds.service_account_pub}",
                    f"--service-account-signing-key-file={creds.service_account_key}",
                    f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                    # No token controller runs, so pods must not need a mounted service-account token.
                    "--disable-admission-plugins=ServiceAccount",
                    # The endpoints of the `kubernetes` service may not be a loopback address; without this the
                    # apiserver logs a validation error every 10 s.
                    "--endpoint-reconciler-type=none",
                    # pods/log is proxied to the node's InternalIP (127.0.0.1), never to a hostname to resolve.
                    "--kubelet-preferred-address-types=InternalIP,Hostname",
                    "--profiling=false",
                ),
                ports=(p.apiserver,),
                ready=self.apiserver_ready,
                after_ready=self.install_api_objects,
                # On SIGTERM it stops listening at once, then 1.20 waits up to --request-timeout (60 s) for open
                # watches (e.g. a triggerer's), which it never ends itself. It keeps no state of its own (etcd
                # does), so a SIGKILL soon after loses nothing.
                stop_timeout=APISERVER_STOP_TIMEOUT,
            ),
            Component(
                # Started after the CRDs exist, so the garbage collector watches the job kinds from its start
                # instead of after its next discovery resync (about 30 s).
                "kube-controller-manager",
                (
                    kcm,
                    f"--kubeconfig={sd / 'pki' / 'controller-manager.kubeconfig'}",
                    # resourcequota: computes each ResourceQuota's usage, without which the quota admission plugin
                    # refuses every create in its namespace ("status unknown for quota") instead of counting.
                    "--controllers=garbagecollector,namespace,serviceaccount,clusterrole-aggregation,resourcequota",
                    "--leader-elect=false",
                    "--use-service-account-credentials=false",
                    # Serve nothing: neither the deprecated insecure port nor a secure one with generated certs.
                    "--port=0",
                    "--secure-port=0",
                ),
            ),
            Component(
                "controller",
                self._controller_argv(python),
                # Ready once its TrainJob status server listens (with the gate off it only has to stay alive).
                ports=(p.status_server,),
                module="airflow_trainjob_local.controller",
                workload=True,
                ready=None if self._status_server_off() else (lambda: _accepts_connections(p.status_server)),
            ),
            Component(
                "kubelet",
                (
                    python,
                    "-m",
                    "airflow_trainjob_local.kubelet",
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "--node-name",
                    self.node_name,
                    "--port",
                    str(p.kubelet),
                    "--state-dir",
                    str(sd / "kubelet"),
                ),
                ports=(p.kubelet,),
                module="airflow_trainjob_local.kubelet",
                workload=True,
                # Ready once its log server listens: up holds the port until then.
                ready=lambda: _accepts_connections(p.kubelet),
            ),
        ]

    def _controller_argv(self, python: str) -> tuple[str, ...]:
        pki_dir = self.state_dir / "pki"
        argv = [python, "-m", "airflow_trainjob_local.controller", "--kubeconfig", str(self.kubeconfig)]
        argv += ["--status-server-port", str(self.ports.status_server)]
        argv += ["--status-server-cert", str(pki_dir / "status-server.crt")]
        argv += ["--status-server-key", str(pki_dir / "status-server.key")]
        argv += ["--status-server-ca", str(self.ca_cert)]
        if self.feature_gates:
            argv += ["--feature-gates", self.feature_gates]
        return tuple(argv)

    def _status_server_off(self) -> bool:
        gates = (self.feature_gates or "").replace(" ", "").lower()
        return "trainjobstatus=false" in gates.split(",")

    # --- up / down / status ------------------------------------------------------------------------------

    def up(self) -> list[str]:
        """Start what is not running; install or update the CRDs, install the built-in runtimes; write the kubeconfig.

        Idempotent: when every component is running and the apiserver is ready, it starts nothing.
        Before it starts anything it reserves every port the components it will start listen on
        (:func:`port_reservation.reserved`), and holds them until every component is up, so that no outgoing
        connection, the cluster's own included, takes one as its source port meanwhile. Warns (stderr) when
        those ports lie in the kernel's ephemeral range. May build the binaries first (see
        :func:`build.ensure_binaries`; minutes, once per machine).

        :returns: the names of the components it started, in start order; empty when all were running.
        :raises ClusterError: a port is taken (raised before anything starts, naming every taken port and what
            holds it; a port held only by what frees itself, such as the listener of a component killed a moment
            ago, is waited for first, up to :data:`port_reservation.RELEASE_TIMEOUT` seconds), a process exited
            or did not become ready in time, or the cluster in this state dir runs with other ports.
        :raises build.BuildError: the binaries were missing and could not be built.
        """
        with self._lock():
            self._check_same_ports()
            wanted = self._wanted(self.components(), warn=True)
            if all(self._running(c.name) for c in wanted) and self.apiserver_ready() and self.kubeconfig.exists():
                _say(f"already running in {self.state_dir} ({self.server}); started nothing")
                return []
            with self._ports_reserved([c for c in wanted if not self._running(c.name)]):
                return self._start_missing()

    def _start_missing(self) -> list[str]:
        """The body of :meth:`up` once the ports are held: start each wanted component that is not running."""
        binaries = build.ensure_binaries()
        creds = pki.ensure_credentials(self.state_dir / "pki")
        pki.ensure_status_server_certificate(self.state_dir / "pki")
        for sub in ("logs", "run", "etcd", "kubelet"):
            (self.state_dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.state_dir / "etcd", 0o700)  # etcd refuses a data dir others can read
        self._write_kubeconfigs(creds)
        self._save()
        started: list[str] = []
        try:
            for component in self._wanted(self.components(binaries), warn=False):
                if self._running(component.name):
                    _say(f"{component.name}: already running (pid {self._pid(component.name)})")
                else:
                    self._start(component)
                    started.append(component.name)
                if component.ready is not None:
                    self._wait_ready(component)
                if component.after_ready:
                    component.after_ready()
            # Components without a readiness check count as started once they survive a short grace
            # period; one grace for all of them rather than one each.
            unchecked = [c.name for c in self.components() if c.ready is None and c.name in started]
            if unchecked:
                time.sleep(WORKLOAD_GRACE)
                for name in unchecked:
                    self._ensure_alive(name, self._pid(name))
        except BaseException:
            # Leave nothing half-started behind (e.g. etcd when the apiserver failed); what was already
            # running before this call stays.
            for name in reversed(started):
                self._stop(name, STOP_TIMEOUT)
            raise
        _say(f"cluster up in {self.state_dir}; kubeconfig: {self.kubeconfig}")
        return started

    def down(self, *, purge: bool = False, timeout: float = STOP_TIMEOUT) -> None:
        """Stop every component (SIGTERM, wait up to ``timeout`` seconds each, then SIGKILL its process group).

        :param purge: also delete the state directory (etcd data, credentials, kubeconfig, logs).
        """
        if not self.state_dir.exists():
            return
        with self._lock():
            names = [c.name for c in self.components()]
            run_dir = self.state_dir / "run"
            # Pid files of components no longer in the table are stopped too, last.
            extra = sorted(p.stem for p in run_dir.glob("*.pid") if p.stem not in names) if run_dir.is_dir() else []
            for name in [*reversed(names), *extra]:
                self._stop(name, timeout)
        if purge and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
            _say(f"deleted {self.state_dir}")

    def stop_component(self, name: str, timeout: float = STOP_TIMEOUT) -> None:
        """Stop one component (SIGTERM, then SIGKILL after ``timeout`` seconds), leaving the others running; for
        fault tests. :meth:`up` starts it again (and any other missing one).

        :raises ClusterError: no component has that name.
        """
        names = [c.name for c in self.components()]
        if name not in names:
            raise ClusterError(f"no component named {name!r}; the components are {', '.join(names)}")
        with self._lock():
            self._stop(name, timeout)

    def status(self) -> ClusterStatus:
        """Each component's process state and the apiserver's readiness; starts and stops nothing."""
        out = []
        for component in self.components():
            if component.workload and not self.workloads:
                continue
            note = ""
            if component.module and not _module_exists(component.module):
                note = f"not available yet: no runnable module {component.module}"
            out.append(
                ComponentStatus(
                    component.name,
                    self._running(component.name),
                    self._pid(component.name),
                    self.log_path(component.name),
                    note,
                )
            )
        return ClusterStatus(out, self.apiserver_ready(), self.server, self.kubeconfig)

    def pids(self) -> dict[str, int]:
        """Pids of the running components, by name."""
        running = {c.name: self._pid(c.name) for c in self.components() if self._running(c.name)}
        return {name: pid for name, pid in running.items() if pid is not None}

    # --- health ------------------------------------------------------------------------------------------

    def apiserver_ready(self) -> bool:
        """True when ``GET /readyz`` answers ``ok`` (anonymous: RBAC lets everyone read the health endpoints)."""
        if not self.ca_cert.exists():
            return False
        context = ssl.create_default_context(cafile=str(self.ca_cert))
        try:
            with urllib.request.urlopen(f"{self.server}/readyz", context=context, timeout=2) as response:
                return response.status == 200 and response.read().strip() == b"ok"
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _etcd_healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports.etcd_client}/health", timeout=2) as response:
                return json.load(response).get("health") == "true"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    # --- API ---------------------------------------------------------------------------------------------

    def api_client(self, token: str | None = None):
        """A ``kubernetes.client.ApiClient`` for this cluster: the admin's (from the kubeconfig), or one that
        sends ``token`` as its bearer token (e.g. a service account's, for least-privilege tests)."""
        from kubernetes import client, config

        if token is None:
            return config.new_client_from_config(config_file=str(self.kubeconfig))
        configuration = client.Configuration()
        configuration.host = self.server
        configuration.ssl_ca_cert = str(self.ca_cert)
        # The client looks the key up as "BearerToken" (newer) or "authorization" (older), and the prefix under
        # the same name; set both so the header is "Bearer <token>" whichever this version uses.
        configuration.api_key = {"BearerToken": token, "authorization": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer", "authorization": "Bearer"}
        return client.ApiClient(configuration)

    def install_api_objects(self) -> None:
        """What ``up`` installs once the apiserver is ready: the CRDs (:meth:`install_crds`), then the built-in
        ClusterTrainingRuntimes (:meth:`install_builtin_runtimes`) and the trainer's public version ConfigMap."""
        self.install_crds()
        self.install_builtin_runtimes()
        self.install_trainer_public_version()

    def install_trainer_public_version(self) -> None:
        """Create the trainer's ``kubeflow-system/kubeflow-trainer-public`` ConfigMap (with its Role and RoleBinding)
        where missing, as upstream's chart does (:mod:`.trainer.public_version`).

        :raises ClusterError: the apiserver refused one of them.
        """
        from kubernetes.client.exceptions import ApiException

        from airflow_trainjob_local.trainer import public_version

        with self.api_client() as api_client:
            try:
                public_version.install_public_version(api_client, _say)
            except ApiException as e:
                detail = str(e.body or "")[:2000]
                raise ClusterError(
                    f"installing the trainer's public ConfigMap failed: {e.status} {e.reason}: {detail}"
                ) from e

    def install_builtin_runtimes(self) -> list[str]:
        """Create the built-in ClusterTrainingRuntimes of :mod:`.trainer.runtimes` that do not exist; one that exists
        (e.g. edited by a user) is left as it is. One line each on stderr.

        :returns: the names of the runtimes created.
        :raises ClusterError: the apiserver refused a runtime.
        """
        from kubernetes.client.exceptions import ApiException

        from airflow_trainjob_local.trainer import runtimes

        with self.api_client() as api_client:
            try:
                return runtimes.install_builtin_runtimes(api_client, _say)
            except ApiException as e:
                detail = str(e.body or "")[:2000]
                raise ClusterError(f"installing the built-in runtimes failed: {e.status} {e.reason}: {detail}") from e

    def install_crds(self, timeout: float = 30.0) -> None:
        """Create the CRDs (the six ``kubeflow.org/v1`` job kinds of :mod:`.crds`, the Trainer v2 kinds and JobSet of
        :mod:`.trainer.crds`), or replace those whose spec differs (the hash annotation of :mod:`.crds`), and wait
        until each is Established.

        :raises ClusterError: a CRD is not Established after ``timeout`` seconds.
        """
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        # Imported here: the generated Trainer models take about a second to import, which no other command needs.
        from airflow_trainjob_local.trainer import crds as trainer_crds

        def read(api, name: str) -> dict | None:
            # Raw JSON: the schemas are large, and only metadata and conditions are looked at.
            try:
                return json.loads(api.read_custom_resource_definition(name, _preload_content=False).data)
            except ApiException as e:
                if e.status == 404:
                    return None
                raise

        with self.api_client() as api_client:
            api = client.ApiextensionsV1Api(api_client)
            manifests = [*crds.all_crd_manifests(), *trainer_crds.all_crd_manifests()]
            for manifest in manifests:
                name = manifest["metadata"]["name"]
                current = read(api, name)
                try:
                    if current is None:
                        try:
                            api.create_custom_resource_definition(manifest, _preload_content=False)
                        except ApiException as e:
                            if e.status != 409:  # 409: created meanwhile by someone else
                                raise
                        continue
                    wanted = manifest["metadata"]["annotations"][crds.SPEC_HASH_ANNOTATION]
                    if (current["metadata"].get("annotations") or {}).get(crds.SPEC_HASH_ANNOTATION) == wanted:
                        continue
                    manifest = dict(
                        manifest,
                        metadata=dict(manifest["metadata"], resourceVersion=current["metadata"]["resourceVersion"]),
                    )
                    api.replace_custom_resource_definition(name, manifest, _preload_content=False)
                    _say(f"CRD {name}: updated")
                except ApiException as e:
                    detail = str(e.body or "")[:2000]
                    raise ClusterError(f"installing CRD {name} failed: {e.status} {e.reason}: {detail}") from e
            deadline = time.monotonic() + timeout
            for manifest in manifests:
                name = manifest["metadata"]["name"]
                while True:
                    conditions = ((read(api, name) or {}).get("status") or {}).get("conditions") or []
                    if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                        break
                    if time.monotonic() > deadline:
                        raise ClusterError(f"CRD {name} not Established after {timeout:.0f} s")
                    time.sleep(0.1)
        _say(f"CRDs established: {', '.join(m['spec']['names']['plural'] for m in manifests)}")

    # --- internals ---------------------------------------------------------------------------------------

    def _wanted(self, components: list[Component], *, warn: bool) -> list[Component]:
        wanted = []
        for component in components:
            if component.workload and not self.workloads:
                continue
            if component.module and not _module_exists(component.module):
                if warn:
                    _say(f"warning: skipping {component.name}: module {component.module} does not exist yet")
                continue
            wanted.append(component)
        return wanted

    def _write_kubeconfigs(self, creds: pki.Credentials) -> None:
        ca_data = base64.b64encode(creds.ca_cert.read_bytes()).decode()
        for path, user in (
            (self.kubeconfig, pki.ADMIN_USER),
            (self.state_dir / "pki" / "controller-manager.kubeconfig", pki.CONTROLLER_MANAGER_USER),
        ):
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": CLUSTER_NAME, "cluster": {"server": self.server, "certificate-authority-data": ca_data}}
                ],
                "users": [{"name": user, "user": {"token": creds.token(user)}}],
                "contexts": [
                    {"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": user, "namespace": "default"}}
                ],
                "current-context": CLUSTER_NAME,
            }
            pki.write_atomic(path, yaml.safe_dump(config, sort_keys=False).encode(), 0o600)

    def _saved(self) -> dict | None:
        try:
            return json.loads((self.state_dir / "cluster.json").read_text())
        except (OSError, ValueError):
            return None

    def _save(self) -> None:
        data = {"ports": asdict(self.ports), "node_name": self.node_name}
        pki.write_atomic(self.state_dir / "cluster.json", json.dumps(data, indent=2).encode(), 0o644)

    def _check_same_ports(self) -> None:
        saved = self._saved()
        if saved and Ports(**saved["ports"]) != self.ports and any(self._running(c.name) for c in self.components()):
            raise ClusterError(
                f"the cluster in {self.state_dir} is running with ports {saved['ports']}; "
                f"run `down` first or use the same ports"
            )

    @contextmanager
    def _ports_reserved(self, components: list[Component]) -> Iterator[None]:
        """Hold every port of ``components`` (see :func:`port_reservation.reserved`); warn when they lie in the
        kernel's ephemeral range. A port held only by what frees itself — the listener of a component killed a
        moment ago, which the kernel is still tearing down, or the TIME-WAIT of a connection between this
        cluster's ports — is waited for, up to :data:`port_reservation.RELEASE_TIMEOUT` seconds.

        :raises ClusterError: some are taken by a live process, or still held after that wait, before anything
            started: each port, its component, what holds it.
        """
        owners = {port: c.name for c in components for port in c.ports}
        port_range = port_reservation.ephemeral_range()
        below = ""
        if port_range is not None:
            below = (
                f" (at most {port_range[0] - PORT_BLOCK} keeps them below the kernel's ephemeral port range "
                f"{port_range[0]}-{port_range[1]}, where outgoing connections cannot take them)"
            )
        exposed = port_reservation.ephemeral_overlap(owners, port_range, port_reservation.reserved_ports())
        if exposed and port_range is not None:
            _say(
                f"warning: port(s) {_port_list(exposed)} lie in the kernel's ephemeral port range "
                f"{port_range[0]}-{port_range[1]} ({port_reservation.EPHEMERAL_RANGE_FILE}): it gives such ports "
                f"to outgoing connections, the cluster's own included. up holds them until every component "
                f"listens, but a component started again later may find its port taken. Use a --port-base of "
                f"at most {port_range[0] - PORT_BLOCK}, or add the ports to net.ipv4.ip_local_reserved_ports"
            )
        waited: dict[int, float] = {}

        def waiting(port: int, who: str) -> None:
            waited[port] = time.monotonic()
            _say(
                f"port {port} ({owners[port]}): {who}, which lets go of it by itself; "
                f"waiting up to {port_reservation.RELEASE_TIMEOUT:.0f} s"
            )

        try:
            with port_reservation.reserved(owners, own_ports=astuple(self.ports), on_wait=waiting):
                if waited:
                    _say(
                        f"port(s) {_port_list(list(waited))} free after {time.monotonic() - min(waited.values()):.2f} s"
                    )
                yield
        except port_reservation.PortsInUse as e:
            taken = "; ".join(
                f"{port} ({owners[port]})" + (f": {who}" if who else "") for port, who in sorted(e.users.items())
            )
            raise ClusterError(
                f"port(s) on 127.0.0.1 in use, so nothing was started: {taken}. "
                f"Choose another --port-base{below}, or stop what holds them"
            ) from e

    def _start(self, component: Component) -> None:
        log_path = self.log_path(component.name)
        env = dict(os.environ)
        # The Python components import this package even when it is used from a checkout without install.
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        with log_path.open("ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {component.name}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                component.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.state_dir,
                env=env,
                # Own session and process group: survives the starter, and `down` can kill the whole group.
                start_new_session=True,
            )
        # The start time (clock ticks since boot, /proc/<pid>/stat field 22) tells this process apart from a
        # later one that reuses its pid.
        self.pid_path(component.name).write_text(f"{proc.pid} {_start_ticks(proc.pid) or ''}\n")
        _say(f"{component.name}: started (pid {proc.pid}, log {log_path})")

    def _wait_ready(self, component: Component) -> None:
        """Poll ``component.ready`` until True; raise when the process exits or :data:`READY_TIMEOUT` passes."""
        assert component.ready is not None
        pid = self._pid(component.name)
        deadline = time.monotonic() + READY_TIMEOUT
        while not component.ready():
            self._ensure_alive(component.name, pid)
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{component.name} not ready after {READY_TIMEOUT:.0f} s; see {self.log_path(component.name)}"
                )
            time.sleep(0.2)

    def _ensure_alive(self, name: str, pid: int | None) -> None:
        if pid is None or not self._alive(pid, self._started_ticks(name)):
            raise ClusterError(
                f"{name} {_describe_exit(pid)} (pid {pid}); last lines of {self.log_path(name)}:\n"
                f"{_tail(self.log_path(name))}"
            )

    def _pidfile(self, name: str) -> list[str]:
        try:
            return self.pid_path(name).read_text().split()
        except OSError:
            return []

    def _pid(self, name: str) -> int | None:
        fields = self._pidfile(name)
        try:
            return int(fields[0])
        except (IndexError, ValueError):
            return None

    def _started_ticks(self, name: str) -> int | None:
        fields = self._pidfile(name)
        try:
            return int(fields[1])
        except (IndexError, ValueError):
            return None

    def _running(self, name: str) -> bool:
        pid = self._pid(name)
        return pid is not None and self._alive(pid, self._started_ticks(name))

    def _alive(self, pid: int, started_ticks: int | None = None) -> bool:
        """The process exists, is not exiting (a zombie, or being torn down after a SIGKILL: ``PF_EXITING``),
        and is the one we started: same start time as recorded (a pid reused after a reboot or a crash has
        another), or, for a pidfile without one, an argv that names this state dir."""
        _reap(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        fields = stat.rsplit(")", 1)[1].split()
        if port_reservation.is_exiting(fields[0], int(fields[6])):
            return False
        if started_ticks is not None:
            return int(fields[19]) == started_ticks
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        return str(self.state_dir) in cmdline

    def _stop(self, name: str, timeout: float) -> None:
        pid = self._pid(name)
        if pid is None:
            return
        own = [c.stop_timeout for c in self.components() if c.name == name and c.stop_timeout is not None]
        timeout = min([timeout, *own])
        started = self._started_ticks(name)
        if self._alive(pid, started):
            _say(f"{name}: stopping (pid {pid})")
            _signal(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self._alive(pid, started) and time.monotonic() < deadline:
                time.sleep(0.1)
            if self._alive(pid, started):
                _say(f"{name}: still running after {timeout:.0f} s; SIGKILL")
                _kill_group(pid)
                while self._alive(pid, started):
                    time.sleep(0.05)
            # Children it left behind in its process group (it was the group leader).
            _kill_group(pid)
        # Its leader may be a zombie while other threads are still being torn down, holding its sockets: wait
        # for them, so that a start right after this finds the ports free.
        deadline = time.monotonic() + TEARDOWN_TIMEOUT
        while started is not None and not _torn_down(pid, started) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.pid_path(name).unlink(missing_ok=True)

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """One ``up``/``down`` at a time per state dir (e.g. parallel pytest sessions sharing one cluster)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / ".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _module_exists(module: str) -> bool:
    """Whether ``python -m module`` can run: a module, or a package with a ``__main__.py``.

    Looks at files only, without importing the module (its code may be mid-edit or slow to import).
    """
    try:
        spec = importlib.util.find_spec(module)
    except ImportError:
        return False
    if spec is None:
        return False
    if spec.submodule_search_locations is not None:
        return any((Path(loc) / "__main__.py").is_file() for loc in spec.submodule_search_locations)
    return True


def _accepts_connections(port: int) -> bool:
    """Something listens on 127.0.0.1:``port`` (a TCP connect succeeds; closed at once)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _port_list(ports: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    runs: list[list[int]] = []
    for port in sorted(ports):
        if runs and port == runs[-1][-1] + 1:
            runs[-1].append(port)
        else:
            runs.append([port])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


#: Exit statuses of our own children, by pid, as collected by :func:`_reap` (for error messages).
_EXIT_STATUS: dict[int, int] = {}


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _torn_down(pid: int, started_ticks: int) -> bool:
    """Every thread of the process has exited, so every file and socket it held is closed: no such process,
    another process under a reused pid (another start time), or a zombie whose threads are all gone."""
    _reap(pid)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    if int(fields[19]) != started_ticks:
        return True
    return fields[0] in ("Z", "X") and threads == [str(pid)]


def _reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is our child, so an exited component does not linger as a zombie."""
    try:
        reaped, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return
    if reaped == pid:
        _EXIT_STATUS[pid] = status


def _describe_exit(pid: int | None) -> str:
    status = _EXIT_STATUS.get(pid) if pid is not None else None
    if status is None:
        return "exited"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"was killed by signal {signal.Signals(number).name}"
        except ValueError:
            return f"was killed by signal {number}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _reap(pgid)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _say(message: str) -> None:
    print(f"airflow-trainjob-local: {message}", file=sys.stderr, flush=True)
