"""The kubelet's HTTPS endpoint for container logs: ``GET /containerLogs/<namespace>/<pod>/<container>``.

The 1.20 apiserver answers ``pods/log`` by proxying to ``https://<node address>:<kubeletEndpoint port>`` with
that path and the query ``follow``, ``previous``, ``timestamps``, ``sinceSeconds``, ``sinceTime``, ``tailLines``,
``limitBytes`` (``pkg/registry/core/pod/strategy.go`` ``LogLocation``), and streams the body back to the
client, flushing as it goes when following. Every other kubelet path (exec, attach, portForward, stats...)
answers 404. Errors are plain text, as the kubelet writes them; the apiserver turns them into a ``Status``.
"""

from __future__ import annotations

import logging
import re
import select
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from airflow_trainjob_local.kubelet.logs import LogNotFound, LogOptions, LogStore, read_log

log = logging.getLogger(__name__)

_PATH_RE = re.compile(r"^/containerLogs/([^/]+)/([^/]+)/([^/]+)/?$")
# A handshake or request line slower than this is a dead client, not a slow one.
_SOCKET_TIMEOUT_SECONDS = 30.0


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    # Set by LogServer before serving.
    ssl_context: ssl.SSLContext
    store: LogStore
    stopping: threading.Event

    def get_request(self) -> tuple[socket.socket, object]:
        sock, addr = self.socket.accept()
        # The handshake runs in the handler thread (see _Handler.setup), so one stalled client cannot block accept().
        return self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: object, client_address: object) -> None:
        log.debug("log request from %s failed", client_address, exc_info=True)  # noqa: LOG014 - socketserver calls it in its except


class _Handler(BaseHTTPRequestHandler):
    server: _TLSServer
    server_version = "airflow-trainjob-kubelet"

    def setup(self) -> None:
        self.request.settimeout(_SOCKET_TIMEOUT_SECONDS)
        self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _error(self, code: int, message: str) -> None:
        body = message.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        match = _PATH_RE.match(url.path)
        if not match:
            self._error(404, "404 page not found\n")
            return
        namespace, pod, container = match.groups()
        try:
            options = LogOptions.from_query(parse_qs(url.query))
        except ValueError as e:
            self._error(400, f"invalid log options: {e}\n")
            return
        try:
            path = self.server.store.resolve(namespace, pod, container, options.previous)
        except LogNotFound as e:
            self._error(e.status, f"{e}\n")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        store, stopping = self.server.store, self.server.stopping
        try:
            for chunk in read_log(
                Path(path),
                options,
                is_active=lambda: store.is_active(path),
                should_stop=lambda: stopping.is_set() or self._client_gone(),
            ):
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            log.debug("log client for %s/%s/%s went away", namespace, pod, container)

    def _client_gone(self) -> bool:
        """Whether the client closed the connection (it sends nothing after its request, so readable = closed)."""
        sock = self.request
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            sock.setblocking(False)
            try:
                return sock.recv(1) == b""
            finally:
                sock.settimeout(_SOCKET_TIMEOUT_SECONDS)
        except (ssl.SSLWantReadError, BlockingIOError):
            return False
        except OSError:
            return True

    def do_POST(self) -> None:
        self._error(404, "404 page not found\n")

    do_PUT = do_DELETE = do_PATCH = do_POST


class LogServer:
    """Serves :class:`LogStore` over HTTPS on ``host:port`` in a background thread.

    :param client_ca: if given, clients must present a certificate signed by this CA (the apiserver's
        ``--kubelet-client-certificate``), like the kubelet's ``--client-ca-file``; otherwise any local client
        may read logs.
    :raises OSError: the port is taken (from the constructor).
    """

    def __init__(
        self,
        store: LogStore,
        *,
        port: int,
        cert: Path,
        key: Path,
        client_ca: Path | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        if client_ca is not None:
            context.load_verify_locations(client_ca)
            context.verify_mode = ssl.CERT_REQUIRED
        self._server = _TLSServer((host, port), _Handler)
        self._server.ssl_context = context
        self._server.store = store
        self._server.stopping = threading.Event()
        self._thread = threading.Thread(target=self._server.serve_forever, name="log-server", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting, end follow streams and close the socket."""
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
