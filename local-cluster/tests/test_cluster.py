"""Tests of the local cluster itself, through the Kubernetes API only (official client, kubectl).

The session cluster may run the local training controller, which reconciles every job these tests create and
writes its status; assertions on status therefore read the server's answer to the very write under test (the
object as stored by that write), never a later read that a controller could have raced.

Lifecycle tests (up, idempotency, down, a taken port, the command line) run a private second cluster
(``spare_cluster``: Kubernetes only, ports base+10..base+13) so that the session cluster is never stopped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from airflow_trainjob_local import build, crds
from airflow_trainjob_local.cluster import LocalCluster
from airflow_trainjob_local.constants import GROUP, JOB_KINDS, VERSION, JobKind
from airflow_trainjob_local.port_reservation import bindable, port_users
from airflow_trainjob_local.testing.waiting import pod_gone, wait_for

KINDS = list(JOB_KINDS.values())
KIND_IDS = [k.kind for k in KINDS]


def job_manifest(kind: JobKind, name: str, **spec_overrides) -> dict:
    """A minimal job of ``kind``: one Worker running a no-op Python command."""
    worker = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {
            "spec": {
                "containers": [
                    {"name": kind.default_container, "image": "unused", "command": [sys.executable, "-c", "pass"]}
                ]
            }
        },
    }
    spec = {kind.replica_specs_key: {"Worker": worker}, "runPolicy": {"cleanPodPolicy": "None"}}
    spec.update(spec_overrides)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind.kind,
        "metadata": {"name": name, "labels": {"suite": "test-cluster"}},
        "spec": spec,
    }


def api_error(e: ApiException) -> tuple[int, str]:
    """(HTTP status, Status reason) of an API error."""
    return e.status, json.loads(e.body).get("reason", "")


def owned_pod(name: str, owner: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        # Long-running, so that when a kubelet runs it, the garbage collector's delete has to stop it.
        "spec": {
            "containers": [
                {"name": "c", "image": "unused", "command": [sys.executable, "-c", "import time; time.sleep(300)"]}
            ]
        },
    }


# --- CRDs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_job_kind_is_served(kind: JobKind, custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    created = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "job-a")
    )
    assert created["kind"] == kind.kind
    assert created["metadata"]["uid"]
    assert created["metadata"]["resourceVersion"]
    assert created["metadata"]["creationTimestamp"]

    got = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, "job-a")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["spec"][kind.replica_specs_key]["Worker"]["replicas"] == 1

    listed = custom_objects.list_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, label_selector="suite=test-cluster"
    )
    assert [item["metadata"]["name"] for item in listed["items"]] == ["job-a"]
    assert listed["metadata"]["resourceVersion"]
    assert (
        custom_objects.list_namespaced_custom_object(
            GROUP, VERSION, namespace, kind.plural, label_selector="suite=other"
        )["items"]
        == []
    )


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_schema_checks_top_level_structure(
    kind: JobKind, custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    def create(manifest: dict) -> tuple[int, str]:
        with pytest.raises(ApiException) as info:
            custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, manifest)
        return api_error(info.value)

    missing_specs = job_manifest(kind, "no-specs")
    del missing_specs["spec"][kind.replica_specs_key]
    assert create(missing_specs) == (422, "Invalid")
    assert create(job_manifest(kind, "specs-list", **{kind.replica_specs_key: []})) == (422, "Invalid")
    assert create(job_manifest(kind, "replica-string", **{kind.replica_specs_key: {"Worker": "x"}})) == (
        422,
        "Invalid",
    )
    assert create(job_manifest(kind, "run-policy-string", runPolicy="Never")) == (422, "Invalid")
    bad_spec = job_manifest(kind, "spec-string")
    bad_spec["spec"] = "x"
    assert create(bad_spec) == (422, "Invalid")
    # Fields the schema does not name are pruned, as by a real cluster's CRDs (see test_crd_schema.py).
    pruned = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "extra", someFutureField={"a": 1})
    )
    assert "someFutureField" not in pruned["spec"]


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_status_subresource(kind: JobKind, custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    name = "job-s"
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, job_manifest(kind, name))

    # A status sent with a plain patch is dropped; the rest of the patch applies.
    plain = custom_objects.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        kind.plural,
        name,
        {"metadata": {"labels": {"patched": "plain"}}, "status": {"startTime": "2001-01-01T00:00:00Z"}},
    )
    assert plain["metadata"]["labels"]["patched"] == "plain"
    assert plain.get("status", {}).get("startTime") != "2001-01-01T00:00:00Z"
    got = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, name)
    assert got.get("status", {}).get("startTime") != "2001-01-01T00:00:00Z"

    # Through the status subresource the status sticks and a spec change is dropped.
    conditions = [{"type": "Created", "status": "True", "reason": f"{kind.kind}Created"}]
    stored = custom_objects.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        kind.plural,
        name,
        {
            "status": {"lastReconcileTime": "2001-01-01T00:00:00Z", "conditions": conditions},
            "spec": {kind.replica_specs_key: {"Worker": {"replicas": 7}}},
        },
    )
    assert stored["status"]["lastReconcileTime"] == "2001-01-01T00:00:00Z"
    assert stored["status"]["conditions"][0]["reason"] == f"{kind.kind}Created"
    assert stored["spec"][kind.replica_specs_key]["Worker"]["replicas"] == 1
    assert int(stored["metadata"]["resourceVersion"]) > int(plain["metadata"]["resourceVersion"])


def test_crds_match_constants(kube_api_client: client.ApiClient) -> None:
    api = client.ApiextensionsV1Api(kube_api_client)
    for kind in KINDS:
        crd = api.read_custom_resource_definition(crds.crd_name(kind))
        assert crd.spec.scope == "Namespaced"
        assert (crd.spec.names.kind, crd.spec.names.plural) == (kind.kind, kind.plural)
        (version,) = crd.spec.versions
        assert version.name == VERSION and version.served and version.storage
        assert version.subresources.status is not None
        columns = [(c.name, c.json_path, c.type) for c in version.additional_printer_columns]
        assert columns == [
            ("State", ".status.conditions[-1:].type", "string"),
            ("Age", ".metadata.creationTimestamp", "date"),
        ]
        assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)


def test_printer_columns_in_server_side_table(
    kube_api_client: client.ApiClient, custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    kind = JOB_KINDS["PyTorchJob"]
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "tbl"))
    response = kube_api_client.call_api(
        f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{kind.plural}",
        "GET",
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    table = json.loads(response.data)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "State", "Age"]
    assert [row["cells"][0] for row in table["rows"]] == ["tbl"]


# --- API semantics -----------------------------------------------------------------------------------------


def test_duplicate_create_is_409_and_missing_is_404(custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    kind = JOB_KINDS["TFJob"]
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "dup"))
    with pytest.raises(ApiException) as info:
        custom_objects.create_namespaced_custom_object(
            GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "dup")
        )
    assert api_error(info.value) == (409, "AlreadyExists")
    with pytest.raises(ApiException) as info:
        custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, "missing")
    assert api_error(info.value) == (404, "NotFound")


def test_rbac_denies_a_token_without_bindings(
    kube_api_client: client.ApiClient, service_account_api_client, namespace: str, local_cluster
) -> None:
    nobody = service_account_api_client("nobody")
    kind = JOB_KINDS["PyTorchJob"]
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(nobody).list_namespaced_pod(namespace)
    assert api_error(info.value) == (403, "Forbidden")
    # Denied as the service account (authenticated by its token), not as an anonymous caller.
    assert f'User "system:serviceaccount:{namespace}:nobody"' in json.loads(info.value.body)["message"]
    with pytest.raises(ApiException) as info:
        client.CustomObjectsApi(nobody).create_namespaced_custom_object(
            GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "denied")
        )
    assert api_error(info.value) == (403, "Forbidden")

    # A Role bound to the account grants exactly what it says: RBAC decides, not a deny-all.
    rbac = client.RbacAuthorizationV1Api(kube_api_client)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "nobody-reads-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": namespace}],
        },
    )

    def can_list() -> bool:
        try:
            client.CoreV1Api(nobody).list_namespaced_pod(namespace)
        except ApiException as e:
            if e.status == 403:
                return False  # the authorizer's informer has not seen the binding yet
            raise
        return True

    wait_for(can_list, bool, 10, "the RoleBinding to take effect")
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(nobody).list_namespaced_service(namespace)
    assert api_error(info.value) == (403, "Forbidden")

    # An unknown token is not authenticated at all.
    with local_cluster.api_client("not-a-token") as stranger:
        with pytest.raises(ApiException) as info:
            client.CoreV1Api(stranger).list_namespaced_pod(namespace)
    assert api_error(info.value) == (401, "Unauthorized")


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
def test_garbage_collection_deletes_owned_pods(
    propagation: str, core_v1: client.CoreV1Api, custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    kind = JOB_KINDS["PyTorchJob"]
    job = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "owner")
    )
    pod_name = f"owned-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespaced_pod(namespace, owned_pod(pod_name, job))
    assert not pod_gone(core_v1, namespace, pod_name)

    custom_objects.delete_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, "owner", propagation_policy=propagation
    )
    wait_for(lambda: pod_gone(core_v1, namespace, pod_name), bool, 60, f"GC to delete {pod_name}")

    def job_gone() -> bool:
        try:
            custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, "owner")
        except ApiException as e:
            if e.status == 404:
                return True
            raise
        return False

    # A Foreground delete completes only once the garbage collector has removed the dependents.
    wait_for(job_gone, bool, 60, "the job's deletion to complete")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
def test_kubectl_get_pytorchjobs(kubeconfig_path: str, custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    kind = JOB_KINDS["PyTorchJob"]
    custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, job_manifest(kind, "via-kubectl")
    )
    result = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig_path, "get", "pytorchjobs", "-n", namespace],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "AGE"]
    assert [row.split()[0] for row in rows] == ["via-kubectl"]


def test_the_printed_line_sets_the_airflow_connection(local_cluster) -> None:
    # The printed line is valid shell that sets exactly the connection JSON (the provider's tests check that
    # Airflow's KubernetesHook reaches the cluster through it: tests/integration/test_connection.py).
    assignment = shlex.split(local_cluster.env_line())
    assert assignment[0] == "export"
    variable, value = assignment[1].split("=", 1)
    assert variable == "AIRFLOW_CONN_KUBERNETES_DEFAULT"
    assert json.loads(value) == {
        "conn_type": "kubernetes",
        "extra": {"kube_config_path": str(local_cluster.kubeconfig), "namespace": "default"},
    }


# --- lifecycle (a private second cluster) ------------------------------------------------------------------


def _gone(pid: int) -> bool:
    """No such process, or only a zombie left for init to reap."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that ``pid`` holds, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:
            continue
        if str(target).startswith("socket:["):
            inodes.add(str(target)[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:
                address_hex, port_hex = local.split(":")
                if len(address_hex) == 8:
                    address = socket.inet_ntop(socket.AF_INET, bytes.fromhex(address_hex)[::-1])
                else:
                    address = "ipv6:" + address_hex
                found.add((address, int(port_hex, 16)))
    return found


def test_up_is_idempotent_and_down_leaves_no_process(spare_cluster) -> None:
    started_at = time.monotonic()
    assert spare_cluster.up() == ["etcd", "kube-apiserver", "kube-controller-manager"]
    first_up = time.monotonic() - started_at
    pids = spare_cluster.pids()
    assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager"}
    assert spare_cluster.status().healthy

    # Everything listens on loopback only, on the configured ports.
    ports = spare_cluster.ports
    listening = set().union(*(_listening_addresses(pid) for pid in pids.values()))
    assert {port for _, port in listening} == {ports.apiserver, ports.etcd_client, ports.etcd_peer}
    assert {address for address, _ in listening} == {"127.0.0.1"}

    started_at = time.monotonic()
    assert spare_cluster.up() == []
    second_up = time.monotonic() - started_at
    assert second_up < 3, f"second up took {second_up:.1f} s (first: {first_up:.1f} s)"
    assert spare_cluster.pids() == pids

    spare_cluster.down()
    for name, pid in pids.items():
        assert _gone(pid), f"{name} (pid {pid}) still running after down"
    assert spare_cluster.pids() == {}
    assert not spare_cluster.apiserver_ready()
    assert not list((spare_cluster.state_dir / "run").glob("*.pid"))
    for port in (ports.apiserver, ports.etcd_client, ports.etcd_peer):
        assert bindable(port), f"port {port} still bound after down"

    # State survives down/up: the same credentials and data, so the kubeconfig still works.
    kubeconfig_before = spare_cluster.kubeconfig.read_bytes()
    assert spare_cluster.up() == ["etcd", "kube-apiserver", "kube-controller-manager"]
    assert spare_cluster.kubeconfig.read_bytes() == kubeconfig_before
    with spare_cluster.api_client() as api_client:
        assert client.CoreV1Api(api_client).read_namespace("default").metadata.name == "default"


# --- build helpers (no cluster) ----------------------------------------------------------------------------


def test_deb_src_entries_keep_uris_suites_and_keys() -> None:
    sources = (
        "Types: deb\n"
        "# a comment\n"
        "URIs: http://mirror.example/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        "\n"
        "Types: deb\n"
        "URIs: http://mirror.example/disabled\n"
        "Suites: bookworm\n"
        "Components: main\n"
        "Enabled: no\n"
        "\n"
        "Types: deb-src\n"
        "URIs: http://mirror.example/already-src\n"
        "Suites: bookworm\n"
        "Components: main\n"
    )
    assert build.deb_src_entries(sources) == (
        "Types: deb-src\n"
        "URIs: http://mirror.example/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    assert build.deb_src_entries("# nothing\n") == ""
    assert build.deb_src_lines("deb [arch=amd64] http://m.example/debian bookworm main\n# deb x\n") == (
        "deb-src [arch=amd64] http://m.example/debian bookworm main\n"
    )


# Lines of vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go as in Debian's kubernetes 1.20.2 source.
TYPE_VALIDATOR_GO = """func (t *typeValidator) Validate(data interface{}) *Result {
\tresult := new(Result)
\tresult.Inc()
\tif data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {
\t\t// nil or zero value for the passed structure require Type: null
\t\tif len(t.Type) > 0 && !t.Type.Contains(nullType) && !t.Nullable {
"""
TYPE_VALIDATOR_PATH = "vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go"


def fake_source_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_the_source_patch_makes_only_nil_null_in_the_crd_type_validator(tmp_path: Path) -> None:
    tree = fake_source_tree(tmp_path, {TYPE_VALIDATOR_PATH: TYPE_VALIDATOR_GO})
    build.apply_source_patches(tree)
    expected = TYPE_VALIDATOR_GO.replace(
        "data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {",
        "data == nil {",
    )
    assert (tree / TYPE_VALIDATOR_PATH).read_text() == expected
    # Applied once: the patched tree no longer has the expected line, so a second run refuses it.
    with pytest.raises(build.BuildError, match="found it 0 times"):
        build.apply_source_patches(tree)


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({}, "no such file"),
        (
            {TYPE_VALIDATOR_PATH: TYPE_VALIDATOR_GO.replace("reflect.ValueOf(data)", "reflect.ValueOf(data) ")},
            "0 times",
        ),
        ({TYPE_VALIDATOR_PATH: TYPE_VALIDATOR_GO * 2}, "2 times"),
    ],
    ids=["file missing", "other text", "twice"],
)
def test_a_source_the_patch_does_not_know_stops_the_build(tmp_path: Path, files: dict[str, str], said: str) -> None:
    tree = fake_source_tree(tmp_path, files)
    with pytest.raises(build.BuildError, match=said) as raised:
        build.apply_source_patches(tree)
    assert TYPE_VALIDATOR_PATH in str(raised.value)
    assert {p.relative_to(tree).as_posix(): p.read_text() for p in tree.rglob("*") if p.is_file()} == files


def test_patches_are_all_checked_before_any_is_written(tmp_path: Path) -> None:
    tree = fake_source_tree(tmp_path, {"a.go": "x := 1\n", "b.go": "y := 2\n"})
    patches = (
        build.SourcePatch("a.go", "x := 1\n", "x := 3\n", "first"),
        build.SourcePatch("b.go", "z := 2\n", "z := 4\n", "second"),
    )
    with pytest.raises(build.BuildError, match=r"b\.go.*second"):
        build.apply_source_patches(tree, patches)
    assert (tree / "a.go").read_text() == "x := 1\n"
    both = (patches[0], build.SourcePatch("a.go", "x := 3\n", "x := 5\n", "on top of the first"))
    build.apply_source_patches(tree, both)
    assert (tree / "a.go").read_text() == "x := 5\n"


def test_binaries_of_an_older_recipe_are_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache is keyed by the recipe: binaries built without the patch (recipe 1, ``kubernetes-<v>/bin``) are
    not found, so the next ``up`` or ``build`` builds the current recipe's once; the old ones stay in place for
    the clusters running from them."""
    monkeypatch.setattr(build, "_source_version", lambda cache: "1.20.2-1")
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/etcd" if name == "etcd" else None)

    def install(bin_dir: Path) -> None:
        bin_dir.mkdir(parents=True)
        for name in build.BINARIES:
            (bin_dir / name).write_text("#!/bin/sh\n")
            (bin_dir / name).chmod(0o755)

    install(tmp_path / "kubernetes-1.20.2-1" / "bin")
    assert build.RECIPE >= 2
    assert build.find_binaries(tmp_path) is None
    install(build.binaries_dir(tmp_path, "1.20.2-1"))
    found = build.find_binaries(tmp_path)
    assert found is not None
    assert found.kube_apiserver == tmp_path / "kubernetes-1.20.2-1" / f"bin-r{build.RECIPE}" / "kube-apiserver"


def test_binaries_are_found_in_the_cache_without_building() -> None:
    """After one build (or CI's warm-up), finding the binaries is offline and instant."""
    started_at = time.monotonic()
    found = build.find_binaries()
    if found is None:
        pytest.skip("binaries not built yet in this cache (run `airflow-trainjob-local up` once)")
    assert time.monotonic() - started_at < 5
    assert found.kube_apiserver.parent == build.binaries_dir(build.cache_dir(), found.version)
    version = subprocess.run([str(found.kube_apiserver), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("Kubernetes v1.")


def test_command_line_up_status_down(spare_cluster, capsys: pytest.CaptureFixture[str]) -> None:
    from airflow_trainjob_local.__main__ import main

    ports = spare_cluster.ports
    args = [
        "--state-dir",
        str(spare_cluster.state_dir),
        "--apiserver-port",
        str(ports.apiserver),
        "--etcd-port",
        str(ports.etcd_client),
        "--etcd-peer-port",
        str(ports.etcd_peer),
        "--kubelet-port",
        str(ports.kubelet),
        "--no-workloads",
    ]
    assert main(["status", *args]) == 1
    assert "not ready" in capsys.readouterr().out

    assert main(["up", *args]) == 0
    out = capsys.readouterr().out
    # stdout is exactly the env line, so that `eval "$(airflow-trainjob-local up)"` works.
    assert out == spare_cluster.env_line() + "\n"
    assert str(spare_cluster.kubeconfig) in out

    assert main(["status", *args]) == 0
    status = capsys.readouterr().out
    assert f"apiserver https://127.0.0.1:{ports.apiserver}: ready" in status
    for name in ("etcd", "kube-apiserver", "kube-controller-manager"):
        assert re.search(rf"^  {name}\s+running\s+pid \d+", status, re.MULTILINE), status
    # The credentials never reach the output: only paths.
    token_file = spare_cluster.state_dir / "pki" / "tokens.csv"
    for row in token_file.read_text().splitlines():
        assert row.split(",")[0] not in status + out

    pids = spare_cluster.pids()
    assert main(["down", "--state-dir", str(spare_cluster.state_dir)]) == 0
    assert all(_gone(pid) for pid in pids.values())
    assert main(["status", "--state-dir", str(spare_cluster.state_dir)]) == 1


def test_up_with_a_taken_port_refuses_before_starting_anything(spare_cluster) -> None:
    """The apiserver's port is taken, etcd's are free: up names the port and starts nothing, not even etcd."""
    from airflow_trainjob_local.cluster import ClusterError

    ports = spare_cluster.ports
    with socket.socket() as squatter:
        # SO_REUSEADDR: a TIME-WAIT left on the port by an earlier test must not stop the squatter itself.
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", ports.apiserver))
        squatter.listen()
        with pytest.raises(ClusterError) as caught:
            spare_cluster.up()
    message = str(caught.value)
    assert f"{ports.apiserver} (kube-apiserver): listened on by " in message
    assert f"(pid {os.getpid()})" in message
    assert "nothing was started" in message and "--port-base" in message
    assert spare_cluster.pids() == {}
    assert not (spare_cluster.state_dir / "run").exists()
    assert not (spare_cluster.state_dir / "logs").exists()
    assert all(bindable(port) for port in (ports.apiserver, ports.etcd_client, ports.etcd_peer))


def _server_time_wait(port: int) -> None:
    """Leave 127.0.0.1:``port`` held only by a connection in TIME-WAIT that its server closed (its listener sets
    SO_REUSEADDR, as every component's does)."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
        with socket.create_connection(("127.0.0.1", port)) as client:
            server.accept()[0].close()
            assert client.recv(1) == b""
    wait_for(
        lambda: [use.status for use in port_users(port)],
        lambda states: bool(states) and set(states) == {"TIME_WAIT"},
        timeout=10,
        what=f"port {port} held by TIME-WAIT only",
    )


def test_up_binds_over_a_time_wait_its_check_does_not_count(spare_cluster) -> None:
    """A TIME-WAIT left by a server's own closed connection does not block a listener: up starts as usual."""
    _server_time_wait(spare_cluster.ports.apiserver)
    assert spare_cluster.up() == ["etcd", "kube-apiserver", "kube-controller-manager"]
    assert spare_cluster.status().healthy


def test_a_killed_component_is_started_again_at_once_every_time(spare_cluster) -> None:
    """The report: SIGKILLed, the kubelet's listener outlived its main thread by about a second (the kernel still
    tearing the rest down), and `up` refused the port at once. `up` now waits for such a port: every kill followed
    at once by `up` starts the component again; and `stop_component` returns only once its port is free."""
    cluster = LocalCluster(spare_cluster.state_dir, spare_cluster.ports, workloads=True)
    cluster.up()

    def stopped(name: str) -> Callable[[dict[str, int]], bool]:
        return lambda pids: name not in pids

    for name, times in (("kubelet", 5), ("kube-apiserver", 2)):
        for _ in range(times):
            os.kill(cluster.pids()[name], signal.SIGKILL)
            wait_for(cluster.pids, stopped(name), timeout=30, interval=0.001, what=f"{name} seen as stopped")
            assert cluster.up() == [name]
    assert cluster.status().healthy
    for _ in range(2):
        cluster.stop_component("kubelet", timeout=0)  # SIGTERM, then SIGKILL at once
        assert bindable(cluster.ports.kubelet)
        assert cluster.up() == ["kubelet"]
