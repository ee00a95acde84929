"""The TrainJob status server (kubeflow/trainer ``v2.3.0`` ``pkg/statusserver/server.go``): HTTPS on 127.0.0.1,
run by the controller process when the ``TrainJobStatus`` feature gate is on, stopped with it.

``POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status`` with a bearer token and
the body ``{"trainerStatus": {...}}``:

1. a body over 64 KiB: 413; the token checked (:mod:`.status_auth`): 401 without a valid one, 403 for a genuine
   token of another TrainJob (upstream: 403 for both);
2. the body parsed and checked (:mod:`.status_payload`): 422 naming each bad field;
3. no ``trainerStatus``: 200, nothing written; else ``status.trainerStatus`` replaced through the TrainJob's
   status subresource (a JSON merge patch; upstream: server-side apply, field manager ``trainer-status``):
   200 with the parsed payload, 404 when the TrainJob does not exist, 422 when the apiserver refuses it.

Errors are ``metav1.Status`` objects (``kind: Status``, ``status: Failure``, ``message``, ``reason``, ``code``).
Anything else (another path or method): 404. Like upstream, requests are not rate-limited and the server does
not look at the TrainJob before writing.
"""

from __future__ import annotations

import http.server
import json
import logging
import re
import ssl
import sys
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes import client

from airflow_trainjob_local.kube import MERGE_PATCH, ApiException
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.status_auth import TokenReviewAuthorizer, Verdict
from airflow_trainjob_local.trainer.status_payload import PayloadError, parse_update_request, trainer_status_patch

__all__ = ["Reply", "StatusServer", "failure"]

log = logging.getLogger(__name__)

#: Upstream's limit on a request body.
MAX_BODY_BYTES = 1 << 16
#: Seconds a connection may stay silent (upstream's read/write timeouts are 10 s).
SOCKET_TIMEOUT = 10.0
_PATH = re.compile(rf"^/apis/{re.escape(c.GROUP)}/{c.VERSION}/namespaces/([^/]+)/trainjobs/([^/]+)/status$")


class Authorizer(Protocol):
    """What the server asks about a request's token (:class:`.status_auth.TokenReviewAuthorizer`)."""

    def authorize(self, header: str | None, namespace: str, name: str) -> Verdict: ...


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: its code and JSON body."""

    code: int
    body: dict[str, Any]


def failure(code: int, reason: str, message: str) -> Reply:
    """A ``metav1.Status`` failure (upstream's ``badRequest``).

    :param code: the HTTP code, also the Status's ``code``.
    :param reason: a ``metav1.StatusReason`` (``Forbidden``, ``Invalid``, ``NotFound``, ...).
    :param message: what went wrong, for the caller.
    """
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason}
    return Reply(code, {**body, "code": code})


class StatusServer:
    """Serves status updates until :meth:`stop`.

    :param api_client: client for the cluster (TokenReviews and status writes).
    :param port: the TCP port on 127.0.0.1.
    :param cert_file: the server's certificate (PEM), signed by the CA the trainer containers are given.
    :param key_file: its private key (PEM).
    :param authorizer: checks tokens; default: a :class:`.status_auth.TokenReviewAuthorizer` on ``api_client``.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        port: int,
        cert_file: str,
        key_file: str,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.custom = client.CustomObjectsApi(api_client)
        self.authorizer = authorizer or TokenReviewAuthorizer(api_client)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        self._httpd = _HTTPServer(("127.0.0.1", port), _handler_for(self), context)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="trainer-status-server", daemon=True)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()
        log.info("TrainJob status server listening on https://127.0.0.1:%d", self.port)

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():  # shutdown() waits for a serve_forever() that never started otherwise
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def handle(self, method: str, path: str, authorization: str | None, body: bytes | None) -> Reply:
        """The answer to one request.

        :param method: the HTTP method.
        :param path: the request path (a query string is ignored).
        :param authorization: the ``Authorization`` header, if any.
        :param body: the body, or ``None`` when it was over :data:`MAX_BODY_BYTES`.
        """
        match = _PATH.match(path.split("?", 1)[0])
        if method != "POST" or match is None:
            return failure(404, "NotFound", "Not found")
        if body is None:
            return failure(413, "RequestEntityTooLarge", "Payload too large")
        namespace, name = match.groups()
        try:
            verdict = self.authorizer.authorize(authorization, namespace, name)
        except (ApiException, OSError) as exc:
            log.warning("TrainJob %s/%s: token review failed: %s", namespace, name, exc)
            return failure(500, "InternalError", "Internal error")
        if verdict is Verdict.UNAUTHENTICATED:
            return failure(401, "Unauthorized", "Unauthorized")
        if verdict is Verdict.FORBIDDEN:
            return failure(403, "Forbidden", "Forbidden")
        try:
            request = parse_update_request(body)
        except PayloadError as exc:
            return failure(422, "Invalid", _invalid_message(name, exc.problems))
        if request:
            error = self._write(namespace, name, request)
            if error is not None:
                return error
        return Reply(200, request)

    def _write(self, namespace: str, name: str, request: dict[str, Any]) -> Reply | None:
        try:
            self.custom.patch_namespaced_custom_object_status(
                c.GROUP,
                c.VERSION,
                namespace,
                c.TRAINJOBS,
                name,
                trainer_status_patch(request),
                _content_type=MERGE_PATCH,
            )
        except ApiException as exc:
            if exc.status in (400, 422):
                return failure(422, "Invalid", _api_message(exc) or "Validation failed")
            if exc.status == 404:
                return failure(404, "NotFound", "Train job not found")
            log.warning("TrainJob %s/%s: status write failed: %s", namespace, name, exc.reason)
            return failure(500, "InternalError", "Internal error")
        return None


def _invalid_message(name: str, problems: list[str]) -> str:
    # The apiserver's wording for a refused write, so a client sees the same shape either way.
    detail = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    return f'{c.TRAINJOB_KIND}.{c.GROUP} "{name}" is invalid: {detail}'


def _api_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or "")
    except ValueError:
        return ""


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, context: ssl.SSLContext) -> None:
        super().__init__(address, handler)
        # The TLS handshake happens in the request's thread (Handler.setup), with a timeout: done on accept, one
        # client that connects and stays silent would stop the server from accepting anyone else.
        self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A failed handshake or a dropped connection: the client's problem, not worth a traceback.
        log.debug("status server: connection from %s failed: %s", client_address, sys.exc_info()[1])


def _handler_for(server: StatusServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = SOCKET_TIMEOUT

        def setup(self) -> None:
            self.request.settimeout(SOCKET_TIMEOUT)
            self.request.do_handshake()
            super().setup()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length <= MAX_BODY_BYTES else None
            self._send(server.handle("POST", self.path, self.headers.get("Authorization"), body))

        def do_GET(self) -> None:
            self._send(server.handle("GET", self.path, None, b""))

        do_PUT = do_PATCH = do_DELETE = do_GET

        def _send(self, reply: Reply) -> None:
            data = json.dumps(reply.body).encode() + b"\n"
            self.send_response(reply.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if reply.code == 401:
                self.send_header("WWW-Authenticate", "Bearer")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    return Handler
