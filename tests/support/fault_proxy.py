"""A loopback fault-injecting HTTPS proxy between the provider and the local kube-apiserver (test support).

The proxy listens on 127.0.0.1 with a serving certificate issued by the cluster's own CA, so clients keep
verifying the server exactly as with the apiserver (same kubeconfig CA). It forwards each request unchanged —
the client's own ``Authorization`` header included, so the apiserver authenticates and authorises the real
caller — and streams the answer back (watches and followed logs stay streams). Nothing is logged of headers
or bodies.

Faults are scripted per test as :class:`Fault` rules, matched in order by method, path pattern, whether the
request is a stream (``watch=true`` or ``follow=true``), with a count::

    proxy.add(Fault("status", method="GET", path="/pytorchjobs/", status=503, times=3))
    ...
    assert proxy.hits() == 3        # the fault was really injected

Actions:

``status``
    answer ``status`` (429, 500, 502, 503, 504, 410 ...) with a Kubernetes ``Status`` body, ``Retry-After``
    when ``retry_after`` is set. With ``after_forward=True`` the request reaches the apiserver first (which
    acts on it: a create creates) and only the answer is lost.
``reset`` / ``drop``
    end the client's connection with a TCP reset / a plain close, without an answer (``after_forward`` as above).
``delay``
    wait ``seconds`` before forwarding.
``cut``
    forward a stream, then reset the connection after ``after_events`` lines (watch events or log lines;
    0: right after the response headers, as when an idle watch dies).
``expire``
    answer a watch with one ``ERROR`` event carrying a 410 ``Expired`` Status, as the apiserver does when the
    resourceVersion is too old, then end the stream.

Every injected fault is recorded (:attr:`FaultProxy.injected`), and every request with what was answered
(:attr:`FaultProxy.requests`), so a test can assert that the fault it scripts was actually hit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

ACTIONS = ("status", "reset", "drop", "delay", "cut", "expire")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "host",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
    "accept-encoding",
}
_REASONS = {
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class Fault:
    """One scripted fault.

    :param action: one of :data:`ACTIONS`.
    :param method: HTTP method to match (``GET``, ``POST``, ``DELETE`` ...); None: any.
    :param path: regular expression searched in the request path (without the query); None: any.
    :param watch: True: only streams (``watch=true`` / ``follow=true``); False: only plain requests; None: both.
    :param times: how many matching requests get the fault; None: all of them.
    :param skip: let this many matching requests through untouched first.
    :param status: for ``status``: the HTTP status to answer.
    :param retry_after: for ``status``: the ``Retry-After`` header, seconds.
    :param seconds: for ``delay``: seconds to wait before forwarding.
    :param after_forward: for ``status``/``reset``/``drop``: forward first, then lose the answer.
    :param after_events: for ``cut``: lines passed through before the cut.
    """

    action: str
    method: str | None = None
    path: str | None = None
    watch: bool | None = None
    times: int | None = 1
    skip: int = 0
    status: int = 503
    retry_after: float | None = None
    seconds: float = 0.0
    after_forward: bool = False
    after_events: int = 1
    matched: int = field(default=0, init=False)
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {self.action!r}")

    @property
    def label(self) -> str:
        what = f"{self.status}" if self.action == "status" else self.action
        return f"{what} {self.method or '*'} {self.path or '*'}{' (stream)' if self.watch else ''}"

    def _matches(self, method: str, path: str, stream: bool) -> bool:
        return (
            (self.method is None or self.method == method)
            and (self.path is None or re.search(self.path, path) is not None)
            and (self.watch is None or self.watch == stream)
        )


class FaultProxy:
    """The proxy, served from a thread of its own (the tests stay synchronous).

    :param upstream: the apiserver's URL (``https://127.0.0.1:<port>``).
    :param ca_cert: the cluster CA (to verify the apiserver, and the CA that issued the proxy's certificate).
    :param cert_pem, key_pem: the proxy's serving certificate and key (issued by that CA).
    :param workdir: where the proxy's certificate and kubeconfig are written (mode 0600 for secrets).
    """

    def __init__(self, upstream: str, ca_cert: Path, cert_pem: bytes, key_pem: bytes, workdir: Path) -> None:
        self.upstream = upstream.rstrip("/")
        self.ca_cert = Path(ca_cert)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._cert, self._key = self.workdir / "proxy.crt", self.workdir / "proxy.key"
        self._cert.write_bytes(cert_pem)
        self._key.touch(mode=0o600)
        self._key.write_bytes(key_pem)
        self.port: int | None = None
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        #: Every fault injected: ``{"fault", "action", "method", "path", "watch", "at"}``, in order.
        self.injected: list[dict[str, Any]] = []
        #: Every request: ``{"method", "path", "watch", "answer"}`` (answer: status code or the fault's action).
        self.requests: list[dict[str, Any]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._open: set[asyncio.Task] = set()

    # ---- scripting -------------------------------------------------------------------------------------

    def add(self, fault: Fault) -> Fault:
        """Append a rule (rules are matched in the order added; the first one that applies wins)."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every rule (the records stay)."""
        with self._lock:
            self._faults.clear()

    def hits(self, fault: Fault | None = None) -> int:
        """How many times ``fault`` (or any fault) was injected."""
        with self._lock:
            return fault.hits if fault is not None else len(self.injected)

    def _pick(self, method: str, path: str, stream: bool) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.times is not None and fault.hits >= fault.times:
                    continue
                if not fault._matches(method, path, stream):
                    continue
                fault.matched += 1
                if fault.matched <= fault.skip:
                    continue
                fault.hits += 1
                self.injected.append(
                    {
                        "fault": fault.label,
                        "action": fault.action,
                        "method": method,
                        "path": path,
                        "watch": stream,
                        "at": time.time(),
                    }
                )
                return fault
        return None

    # ---- lifecycle -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ssl.load_cert_chain(self._cert, self._key)
        client_ssl = ssl.create_default_context(cafile=str(self.ca_cert))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=client_ssl),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # access_log=None: the proxy must never write request lines (or anything else) to the test's logs.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=server_ssl)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        for task in list(self._open):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    # ---- clients ----------------------------------------------------------------------------------------

    def kubeconfig(self, source: Path) -> Path:
        """A copy of kubeconfig ``source`` whose server is this proxy (credentials unchanged), mode 0600."""
        config = yaml.safe_load(Path(source).read_text())
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = self.url
        path = self.workdir / "kubeconfig"
        path.touch(mode=0o600)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def airflow_connection(self, source_kubeconfig: Path, namespace: str) -> str:
        """The JSON of an Airflow ``kubernetes`` connection that reaches the cluster through this proxy."""
        extra = {"kube_config_path": str(self.kubeconfig(source_kubeconfig)), "namespace": namespace}
        return json.dumps({"conn_type": "kubernetes", "extra": extra})

    # ---- the proxy -------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        self._open.add(task)
        try:
            return await self._serve(request)
        finally:
            self._open.discard(task)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        query = request.rel_url.query
        stream = (
            query.get("watch", "").lower() in ("true", "1")
            or query.get("follow", "").lower() in ("true", "1")
            or "/watch/" in request.path
        )
        record = {"method": request.method, "path": request.path, "watch": stream, "answer": None}
        self.requests.append(record)
        fault = self._pick(request.method, request.path, stream)
        action = fault.action if fault else None
        body = await request.read()

        if action == "delay":
            await asyncio.sleep(fault.seconds)
        elif action == "expire":
            record["answer"] = "expire"
            return await self._expire(request)
        elif action in ("status", "reset", "drop") and not fault.after_forward:
            record["answer"] = action if action != "status" else fault.status
            return self._fail(request, fault)

        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"
        try:
            upstream = await self._session.request(
                request.method,
                self.upstream + str(request.rel_url),
                headers=headers,
                data=body or None,
                allow_redirects=False,
            )
        except (aiohttp.ClientError, OSError):
            # The apiserver is unreachable: the client sees what it would see without the proxy, a dead connection.
            record["answer"] = "upstream unreachable"
            return self._fail(request, Fault("reset"))
        try:
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
            if action in ("status", "reset", "drop"):  # after_forward: the apiserver acted; the answer is lost
                await upstream.read()
                record["answer"] = action if action != "status" else fault.status
                return self._fail(request, fault)
            if not stream:
                data = await upstream.read()
                record["answer"] = upstream.status
                return web.Response(status=upstream.status, body=data, headers=out_headers)
            record["answer"] = upstream.status
            response = web.StreamResponse(status=upstream.status, headers=out_headers)
            response.enable_chunked_encoding()
            await response.prepare(request)
            lines = 0
            if action == "cut" and fault.after_events == 0:  # the stream dies while idle, before any line
                record["answer"] = "cut"
                _reset(request)
                return response
            try:
                async for line in upstream.content:
                    await response.write(line)
                    lines += 1
                    if action == "cut" and lines >= fault.after_events:
                        record["answer"] = "cut"
                        _reset(request)
                        return response
            except (ConnectionResetError, aiohttp.ClientError, asyncio.CancelledError):
                upstream.close()
                _reset(request)
                return response
            await response.write_eof()
            return response
        finally:
            upstream.release()

    def _fail(self, request: web.Request, fault: Fault) -> web.StreamResponse:
        if fault.action == "status":
            status = fault.status
            payload = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"injected by the fault proxy: {status}",
                "reason": _REASONS.get(status, "Unknown"),
                "code": status,
            }
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            return web.json_response(payload, status=status, headers=headers)
        if fault.action == "reset":
            _reset(request)
        else:
            if request.transport is not None:
                request.transport.close()
        return web.Response(status=599)  # never sent: the connection is gone

    async def _expire(self, request: web.Request) -> web.StreamResponse:
        """A watch that the apiserver ends at once: one ERROR event with a 410 Expired Status."""
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        event = {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "too old resource version: 1 (2)",
                "reason": "Expired",
                "code": 410,
            },
        }
        await response.write(json.dumps(event).encode() + b"\n")
        await response.write_eof()
        return response


def _reset(request: web.Request) -> None:
    """End the connection with a TCP reset (SO_LINGER 0), as a crashed peer or middlebox would."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


# aiohttp logs a traceback when a handler's connection was closed under it; that is the point here.
logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
