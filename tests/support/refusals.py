"""Support for the refusal tests: what a task "said" about an error, searched for response headers and bodies;
a real validating admission webhook; a ResourceQuota that has been counted; a task instance for reschedule mode.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import structlog

from tests.support.jobs import TaskInstanceStandIn

#: What a raw ``ApiException`` prints (its headers and body) and no message of ours may contain.
LEAK_MARKERS = (
    "HTTP response headers",
    "HTTP response body",
    "HTTPHeaderDict",
    "Content-Type",
    "Audit-Id",
    "Audit-ID",
    "X-Kubernetes-Pf",
    "Cache-Control",
    '"kind":"Status"',
    '"kind": "Status"',
    "Reason: ",
)


def everything_said(error: BaseException) -> str:
    """All Airflow would print about ``error``: ``str``/``repr`` of it and its args, and its whole chain as the task
    log renders it — the JSON task log's ``ExceptionDictTransformer`` (``exc_value`` is ``str()`` of each exception
    in the ``__cause__``/``__context__`` chain) and the plain-text traceback."""
    parts = [str(error), repr(error), *map(repr, error.args)]
    transformer = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)  # as Airflow configures it
    parts.append(json.dumps(transformer((type(error), error, error.__traceback__)), default=str))
    parts.append("".join(traceback.format_exception(error)))
    return "\n".join(parts)


def assert_nothing_leaks(error: BaseException | None, *outputs: str) -> None:
    """Neither ``error`` (with its chain) nor any of ``outputs`` (captured logs) shows response headers or a body."""
    said = "\n".join([everything_said(error) if error is not None else "", *outputs])
    found = [marker for marker in LEAK_MARKERS if marker in said]
    assert not found, f"{found} in what the task produced:\n{said[:3000]}"


class RescheduleTaskInstance(TaskInstanceStandIn):
    """The task instance a sensor in ``reschedule`` mode asks when its first reschedule was (never, here)."""

    def get_first_reschedule_date(self, context: Any) -> None:
        return None


# --- a validating admission webhook, for real ------------------------------------------------------


@dataclass
class AdmissionWebhook:
    """A ValidatingAdmissionWebhook served from 127.0.0.1 over HTTPS (a certificate signed by the cluster's CA,
    which is the registration's ``caBundle``), registered for CREATE of ``pytorchjobs`` and ``trainjobs`` in namespaces carrying
    :attr:`selector` only, so no other test's namespace is touched.

    :param denial: the AdmissionResponse ``status`` it answers with (``allowed: false``), or None to allow.
    """

    admin: Any  # the admin's ApiClient
    pki_dir: Path  # the cluster's (its CA signs the serving certificate)
    tls_dir: Path  # where the serving certificate and key are written (the test's own temporary directory)
    name: str = field(default_factory=lambda: f"refusals-{uuid.uuid4().hex[:8]}.airflow-trainjob.test")
    denial: dict[str, Any] | None = None
    reviews: list[dict[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def selector(self) -> dict[str, str]:
        return {"airflow-trainjob.test/webhook": self.name.split(".")[0]}

    def create_reviews(self) -> list[dict[str, Any]]:
        """The reviews of creates that were not dry runs (each is one attempt of the task's create)."""
        return [r for r in self.reviews if not r.get("dryRun")]

    def start(self) -> None:
        from airflow_trainjob_local import pki

        cert, key = pki.issue_serving_certificate(
            self.pki_dir, "refusals-webhook", dns_names=("localhost",), ip_addresses=("127.0.0.1",)
        )
        tls_dir = Path(self.tls_dir)
        tls_dir.mkdir(parents=True, exist_ok=True)
        (tls_dir / "tls.crt").write_bytes(cert)
        pki.write_atomic(tls_dir / "tls.key", key, 0o600)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls_dir / "tls.crt", tls_dir / "tls.key")
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                webhook.reviews.append(request)
                response: dict[str, Any] = {"uid": request["uid"], "allowed": webhook.denial is None}
                if webhook.denial is not None:
                    response["status"] = webhook.denial
                body = json.dumps(
                    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, name="refusals-webhook", daemon=True).start()
        ca_bundle = (Path(self.pki_dir) / "ca.crt").read_bytes()
        from kubernetes import client

        client.AdmissionregistrationV1Api(self.admin).create_validating_webhook_configuration(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": self.name},
                "webhooks": [
                    {
                        "name": self.name,
                        "clientConfig": {
                            "url": f"https://127.0.0.1:{self._server.server_address[1]}/validate",
                            "caBundle": base64.b64encode(ca_bundle).decode(),
                        },
                        "rules": [
                            {
                                "operations": ["CREATE"],
                                "apiGroups": ["kubeflow.org"],
                                "apiVersions": ["v1"],
                                "resources": ["pytorchjobs"],
                                "scope": "Namespaced",
                            },
                            {
                                "operations": ["CREATE"],
                                "apiGroups": ["trainer.kubeflow.org"],
                                "apiVersions": ["v1alpha1"],
                                "resources": ["trainjobs"],
                                "scope": "Namespaced",
                            },
                        ],
                        "namespaceSelector": {"matchLabels": self.selector},
                        "failurePolicy": "Fail",
                        "sideEffects": "None",
                        "admissionReviewVersions": ["v1"],
                        "timeoutSeconds": 5,
                    }
                ],
            }
        )

    def stop(self) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        try:
            client.AdmissionregistrationV1Api(self.admin).delete_validating_webhook_configuration(self.name)
        except ApiException as e:
            if e.status != 404:
                raise
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def wait_until_called(self, custom_objects: Any, namespace: str) -> None:
        """The registration reaches the apiserver's admission chain through an informer: dry-run creates until
        this webhook reviews one."""
        from kubernetes.client.exceptions import ApiException

        from airflow_trainjob_local.testing.waiting import wait_for

        probe = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "webhook-probe"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": []}}}}},
        }

        def reviewed() -> bool:
            try:
                custom_objects.create_namespaced_custom_object(
                    "kubeflow.org", "v1", namespace, "pytorchjobs", probe, dry_run="All"
                )
            except ApiException:
                pass
            return any(r.get("dryRun") for r in self.reviews)

        wait_for(reviewed, timeout=30, interval=0.5, what=f"webhook {self.name} to be called")


@contextlib.contextmanager
def admission_webhook(
    admin: Any, pki_dir: Path, tls_dir: Path, core_v1: Any, namespace: str
) -> Iterator[AdmissionWebhook]:
    """Start and register an :class:`AdmissionWebhook` for ``namespace`` (labelled for it); stop it afterwards."""
    webhook = AdmissionWebhook(admin, pki_dir, tls_dir)
    core_v1.patch_namespace(namespace, {"metadata": {"labels": webhook.selector}})
    webhook.start()
    try:
        yield webhook
    finally:
        webhook.stop()


# --- a ResourceQuota --------------------------------------------------------------------------------


def counted_quota(core_v1: Any, namespace: str, name: str, hard: dict[str, str]) -> dict[str, Any]:
    """Create ResourceQuota ``name`` and wait until kube-controller-manager has counted its usage (until then the
    quota admission plugin refuses with "status unknown for quota" instead of "exceeded quota")."""
    from airflow_trainjob_local.testing.waiting import wait_for

    core_v1.create_namespaced_resource_quota(namespace, {"metadata": {"name": name}, "spec": {"hard": hard}})

    def counted():
        quota = core_v1.read_namespaced_resource_quota(name, namespace)
        used = (quota.status and quota.status.used) or {}
        return quota if set(hard) <= set(used) else None

    return wait_for(counted, timeout=60, interval=0.5, what=f"ResourceQuota {name} counted by the controller")
