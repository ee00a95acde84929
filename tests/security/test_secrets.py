"""Secrets: the connection's token, kubeconfig content and client certificate/key never appear in
anything the task produces — task log (stdout/stderr, log records, structlog output), XCom,
exceptions (str, repr, chained causes, API error bodies and headers), the rendered template view,
the trigger's serialized kwargs and its events.

The connection carries its kubeconfig inline (the ``kube_config`` extra), with a recognisable token
and a client certificate and key made for the test. Failure messages name only the places where
something leaked, never the secret.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_trainjob.exceptions import InvalidJobSpecError, KubernetesAccessError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob.triggers.training_job import ERROR, FINISHED
from tests.support.deferred import first_event
from tests.support.jobs import TaskInstanceStandIn, pytorch_specs
from tests.support.least_privilege import (
    SERVICE_ACCOUNT,
    apply_rbac,
    connection_uri,
    kubeconfig_with_token,
    token_of,
    unused_port,
    wait_until_allowed,
)
from tests.support.report import record

OK = "print('hello from the master')"
EXIT_1 = "import sys; print('bad input'); sys.exit(1)"


def client_certificate() -> tuple[bytes, bytes]:
    """A self-signed client certificate and its key (PEM), made for this test run."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"trainjob-secret-{uuid.uuid4().hex[:8]}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def fragments(secret: str, size: int = 20) -> list[str]:
    """Pieces of a secret to search for: a partial or re-wrapped copy is still found."""
    if len(secret) <= size:
        return [secret]
    step = max(1, (len(secret) - size) // 4)
    return [secret[i : i + size] for i in range(0, len(secret) - size + 1, step)]


def pem_body(pem: bytes) -> str:
    return "".join(line for line in pem.decode().splitlines() if not line.startswith("-----"))


@dataclass
class Secrets:
    """What must never show up, as search needles (the JWT's common header is not secret: left out)."""

    needles: list[str] = field(default_factory=list)

    def add(self, secret: str) -> None:
        self.needles += fragments(secret)

    def add_token(self, token: str) -> None:
        parts = token.split(".")
        for part in parts[1:] if len(parts) == 3 else parts:  # a JWT's payload and signature; else the whole
            self.add(part)

    def hits(self, text: str) -> int:
        return sum(1 for n in self.needles if n in text)


class Places:
    """Everything the task produced, by place name; counts the places searched and the hits."""

    def __init__(self, secrets: Secrets):
        self.secrets = secrets
        self.places: set[str] = set()  # kinds of place searched (stable from run to run)
        self.strings = 0  # texts searched (varies with the number of log records)
        self.leaks: dict[str, int] = {}

    def check(self, place: str, value: Any) -> None:
        text = value if isinstance(value, str) else json.dumps(value, default=repr, sort_keys=True)
        self.places.add(place)
        self.strings += 1
        hits = self.secrets.hits(text)
        if hits:
            self.leaks[place] = self.leaks.get(place, 0) + hits

    def exception(self, place: str, exc: BaseException | None) -> None:
        """str and repr of the exception and of every cause and context in its chain, API bodies and headers."""
        seen = 0
        while exc is not None and seen < 10:
            self.check(f"{place}: str", str(exc))
            self.check(f"{place}: repr", repr(exc))
            self.check(f"{place}: args", repr(exc.args))
            for attribute in ("body", "headers", "reason", "problems"):
                if getattr(exc, attribute, None) is not None:
                    self.check(f"{place}: .{attribute}", repr(getattr(exc, attribute)))
            exc = exc.__cause__ or exc.__context__
            seen += 1

    @staticmethod
    def start(capfd, caplog) -> None:
        """From here on output is the task's: drop what the test's own setup printed or logged (e.g. the
        kubernetes client logging the TokenRequest answer at DEBUG)."""
        capfd.readouterr()
        caplog.clear()

    def task_output(self, capfd, caplog) -> None:
        out, err = capfd.readouterr()
        self.check("stdout (task log, structlog)", out)
        self.check("stderr", err)
        for r in caplog.records:
            self.check("log records", f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}")

    def rendered(self, task: Any) -> None:
        for name in task.template_fields:
            self.check(f"rendered template field {name}", repr(getattr(task, name, None)))

    def xcom(self, ti: TaskInstanceStandIn) -> None:
        self.check("XCom", ti.xcom)

    def finish(self, scenario: str) -> None:
        record("secrets", scenario=scenario, places=len(self.places), texts=self.strings, hits=sum(self.leaks.values()))
        assert self.places
        assert self.leaks == {}, f"secret material found in: {sorted(self.leaks)}"  # place names only


@pytest.fixture
def cert_and_key() -> tuple[bytes, bytes]:
    return client_certificate()


def secrets_of(token: str, cert_and_key: tuple[bytes, bytes], config: dict) -> Secrets:
    cert, key = cert_and_key
    secrets = Secrets()
    secrets.add_token(token)
    for pem in (cert, key):
        secrets.add(pem_body(pem))
        secrets.add(base64.b64encode(pem).decode())
    # The kubeconfig's secret content is its user entry (a dump of the whole file contains it; its
    # server and CA are not secret, and pieces of them like '"apiVersion": "v1"' are everywhere).
    for user in config["users"]:
        secrets.add(json.dumps(user["user"], sort_keys=True))
    return secrets


def use_connection(monkeypatch, config: dict, namespace: str) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT",
        connection_uri({"kube_config": yaml.safe_dump(config), "namespace": namespace}),
    )


@pytest.fixture
def secret_conn(
    local_cluster, namespace, service_account_api_client, kube_api_client, cert_and_key, monkeypatch
) -> Secrets:
    """``kubernetes_default``: an inline kubeconfig with the ServiceAccount's token (bound to the shipped
    Role) and a client certificate and key. Returns what must not leak."""

    sa = service_account_api_client(SERVICE_ACCOUNT)
    apply_rbac(kube_api_client, namespace)

    wait_until_allowed(sa, namespace)
    config = kubeconfig_with_token(local_cluster, token_of(sa), namespace, client_cert=cert_and_key)
    use_connection(monkeypatch, config, namespace)
    return secrets_of(token_of(sa), cert_and_key, config)


@pytest.fixture
def task_output(capfd, caplog):
    caplog.set_level(logging.DEBUG)
    return capfd, caplog


def make(code: str, **kwargs) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.5)
    return TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=0), **kwargs
    )


def render_and_execute(operator, ti) -> tuple[Any, BaseException | None]:
    context = {"ti": ti, "params": {}}
    try:
        operator.render_template_fields(context)
        return operator.execute(context), None
    except BaseException as e:
        return None, e


def test_synchronous_success(secret_conn, task_output):
    places = Places(secret_conn)
    Places.start(*task_output)
    ti = TaskInstanceStandIn()
    operator = make(OK)
    result, raised = render_and_execute(operator, ti)
    assert raised is None and result["conditions"][-1]["type"] == "Succeeded"
    places.check("return value", result)
    places.xcom(ti)
    places.rendered(operator)
    places.task_output(*task_output)
    places.finish("sync success")


def test_synchronous_failure(secret_conn, task_output):
    places = Places(secret_conn)
    Places.start(*task_output)
    ti = TaskInstanceStandIn()
    operator = make(EXIT_1)
    _, raised = render_and_execute(operator, ti)
    assert raised is not None and "exit code 1" in str(raised)
    places.exception("exception", raised)
    places.xcom(ti)
    places.rendered(operator)
    places.task_output(*task_output)
    places.finish("sync failure")


def test_bad_token_401(local_cluster, namespace, cert_and_key, monkeypatch, task_output):
    token = f"trainjob-secret-token-{uuid.uuid4().hex}"
    config = kubeconfig_with_token(local_cluster, token, namespace, client_cert=cert_and_key)
    use_connection(monkeypatch, config, namespace)
    places = Places(secrets_of(token, cert_and_key, config))
    Places.start(*task_output)
    ti = TaskInstanceStandIn()
    operator = make(OK)
    _, raised = render_and_execute(operator, ti)
    assert isinstance(raised, KubernetesAccessError) and "401" in str(raised)
    places.exception("exception", raised)
    sensor = TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="anything", timeout=5, poke_interval=1)
    with pytest.raises(KubernetesAccessError) as sensed:
        sensor.poke({})
    places.exception("sensor exception", sensed.value)
    places.xcom(ti)
    places.rendered(operator)
    places.rendered(sensor)
    places.task_output(*task_output)
    places.finish("bad token (401), operator and sensor")


def test_missing_permission_403(
    local_cluster, namespace, service_account_api_client, cert_and_key, monkeypatch, task_output
):
    sa = service_account_api_client("no-rights")  # no Role bound
    config = kubeconfig_with_token(local_cluster, token_of(sa), namespace, client_cert=cert_and_key)
    use_connection(monkeypatch, config, namespace)
    places = Places(secrets_of(token_of(sa), cert_and_key, config))
    Places.start(*task_output)
    _, raised = render_and_execute(make(OK), TaskInstanceStandIn())
    assert isinstance(raised, KubernetesAccessError) and "403" in str(raised)
    places.exception("exception", raised)
    places.task_output(*task_output)
    places.finish("no permission (403)")


def test_deferred_success_and_trigger_401(
    secret_conn, local_cluster, namespace, cert_and_key, monkeypatch, task_output
):
    places = Places(secret_conn)
    Places.start(*task_output)
    ti = TaskInstanceStandIn()
    operator = make(OK, deferrable=True)
    _, raised = render_and_execute(operator, ti)
    assert isinstance(raised, TaskDeferred)
    places.exception("TaskDeferred", raised)
    trigger = raised.trigger
    places.check("trigger serialize()", trigger.serialize())
    places.check("trigger repr", repr(trigger))
    event = first_event(trigger)
    assert event["outcome"] == FINISHED
    places.check("trigger event", event)
    result = operator.execute_complete({"ti": ti}, event)
    places.check("return value", result)
    places.xcom(ti)
    places.rendered(operator)

    # The same trigger when the token is refused: its error event.
    bad = f"trainjob-secret-token-{uuid.uuid4().hex}"
    config = kubeconfig_with_token(local_cluster, bad, namespace, client_cert=cert_and_key)
    use_connection(monkeypatch, config, namespace)
    places.secrets.needles += secrets_of(bad, cert_and_key, config).needles
    refused = first_event(trigger)
    assert refused["outcome"] == ERROR and "401" in refused["message"]
    places.check("trigger error event", refused)
    with pytest.raises(Exception) as resumed:
        operator.execute_complete({"ti": ti}, refused)
    places.exception("execute_complete exception", resumed.value)
    places.task_output(*task_output)
    places.finish("deferred success, trigger 401")


def test_invalid_input_error_carries_no_connection_material(secret_conn, task_output):
    places = Places(secret_conn)
    Places.start(*task_output)
    ti = TaskInstanceStandIn()
    operator = make(OK, namespace="ML_Team")
    _, raised = render_and_execute(operator, ti)
    assert isinstance(raised, InvalidJobSpecError)
    places.exception("exception", raised)
    places.rendered(operator)
    places.task_output(*task_output)
    places.finish("bad input")


def test_the_search_finds_a_planted_copy(secret_conn):
    """Guards the method: the needles do find the secrets, whole or cut."""
    places = Places(secret_conn)
    for needle in secret_conn.needles[:: max(1, len(secret_conn.needles) // 5)]:
        places.check("planted", f"prefix {needle} suffix")
    assert len(places.leaks) == 1 and places.leaks["planted"] >= 5


def _broken(config: dict, token: str) -> dict[str, str]:
    """Kubeconfigs that fail in different places while holding the secrets (text of the ``kube_config`` extra)."""
    import copy

    variants = {}
    v = copy.deepcopy(config)
    v["current-context"] = "missing"
    variants["current-context names no context"] = yaml.safe_dump(v)
    v = copy.deepcopy(config)
    v["contexts"][0]["context"]["user"] = "nobody"
    variants["context names no user"] = yaml.safe_dump(v)
    v = copy.deepcopy(config)
    v["users"][0]["user"]["client-key-data"] = "!!not-base64!!" + token
    variants["client key not base64"] = yaml.safe_dump(v)
    v = copy.deepcopy(config)
    v["users"][0]["user"] = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/nonexistent", "args": ["--token", token]}
    }
    variants["exec plugin that does not exist"] = yaml.safe_dump(v)
    variants["not YAML"] = yaml.safe_dump(config)[:-40] + "\n  bad: [" + token
    return variants


@pytest.mark.parametrize(
    "variant",
    [
        "current-context names no context",
        "context names no user",
        "client key not base64",
        "exec plugin that does not exist",
        "not YAML",
    ],
)
def test_broken_kubeconfig(variant, local_cluster, namespace, cert_and_key, monkeypatch, task_output):
    token = f"trainjob-secret-token-{uuid.uuid4().hex}"
    config = kubeconfig_with_token(local_cluster, token, namespace, client_cert=cert_and_key)
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT",
        connection_uri({"kube_config": _broken(config, token)[variant], "namespace": namespace}),
    )
    places = Places(secrets_of(token, cert_and_key, config))
    Places.start(*task_output)
    ti = TaskInstanceStandIn()
    operator = make(OK)
    _, raised = render_and_execute(operator, ti)
    assert raised is not None and not isinstance(raised, InvalidJobSpecError)
    places.exception("exception", raised)
    places.xcom(ti)
    places.rendered(operator)
    places.task_output(*task_output)
    places.finish(f"broken kubeconfig: {variant}")


FAILING_API_CALL = """
import kubernetes


def test_list_against_a_closed_port():
    configuration = kubernetes.client.Configuration()
    configuration.host = "https://127.0.0.1:{port}"
    configuration.api_key = {{"authorization": "Bearer {token}"}}
    configuration.retries = 0
    kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration)).list_namespace()
"""


@pytest.mark.parametrize("traceback_style", [None, "long"])
def test_a_failing_api_call_in_a_test_prints_no_token(traceback_style, tmp_path):
    """This suite's own output: a test that fails inside a Kubernetes API call must not print the bearer token.
    The project's pytest options (``--tb=short``) leave out the request headers that pytest's default traceback
    shows as the deepest frame's arguments; the ``long`` run is the control that shows the check can fail."""
    import subprocess
    import sys
    from pathlib import Path

    token = f"trainjob-secret-token-{uuid.uuid4().hex}"
    (tmp_path / "test_failing_call.py").write_text(FAILING_API_CALL.format(port=unused_port(), token=token))
    project = Path(__file__).resolve().parents[2]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(project / "pyproject.toml"),
        "--rootdir",
        str(tmp_path),
        "-p",
        "no:cacheprovider",
        str(tmp_path / "test_failing_call.py"),
    ]
    if traceback_style:
        command.append(f"--tb={traceback_style}")
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    output = run.stdout + run.stderr
    assert "1 failed" in output, output[-2000:]
    leaked = token in output
    if traceback_style == "long":
        assert leaked, "control: pytest's long traceback should show the request headers"
    else:
        assert not leaked, "the token is in the test output"
        record("secrets", scenario="a failing test's output", places=1, texts=1, hits=int(leaked))
