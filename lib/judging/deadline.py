"""A total (wall-clock) deadline for one HTTP request, from connecting to the last byte of the answer.

httpx's timeouts are per operation: a read timeout of 5 s is met by a server that sends one byte every
second forever. The judge client needs "this request is over after ``timeout_s``", so every socket
operation of the request gets at most the time left until the deadline of the thread that sends it
(``with total_deadline(seconds): client.post(...)``). When the deadline passes, the next read (or
write, or connect) fails with httpcore's own timeout error, which the SDK reports as a timeout and
the connection is dropped; no thread is left behind reading from it.

``deadline_http_client(timeout, limits)`` builds the ``httpx2.Client`` the OpenAI SDK is given.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
import time

_local = threading.local()


@contextlib.contextmanager
def total_deadline(seconds: float | None):
    """Requests sent by this thread inside the block end at ``now + seconds`` at the latest."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = None if seconds is None else time.monotonic() + float(seconds)
    try:
        yield
    finally:
        _local.deadline = previous


def _left(timeout: float | None, error) -> float | None:
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's total deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """A network stream whose every operation is bounded by the sending thread's deadline."""

    def __init__(self, stream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore2

        return self._stream.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore2

        return self._stream.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        import httpcore2

        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _left(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class _DeadlineBackend:
    def __init__(self, backend):
        self._backend = backend

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        import httpcore2

        return _DeadlineStream(self._backend.connect_tcp(host, port, _left(timeout, httpcore2.ConnectTimeout),
                                                         local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        import httpcore2

        return _DeadlineStream(self._backend.connect_unix_socket(path, _left(timeout, httpcore2.ConnectTimeout),
                                                                 socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None):
    """The TLS context an ``httpx2.Client`` makes by default (the system's CA certificates, or ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR``: the arguments, so a changed environment gets its own), made once: loading the CA
    certificates cost ~30 ms of CPU per client, and a re-judge batch, a probe run and every step of an attribution
    ladder each make a client. A context is safe to share between clients and threads."""
    import httpx2

    return httpx2.create_ssl_context()


def deadline_http_client(timeout, limits=None):
    """An ``httpx2.Client`` (the SDK's defaults) whose connection pools honour ``total_deadline``."""
    import httpx2
    import openai

    class Client(openai.DefaultHttpxClient):
        def __del__(self):  # like the SDK's own client: release the connections with the client
            try:
                self.close()
            except Exception:
                pass

    tls = _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    client = Client(timeout=timeout, verify=tls, **({"limits": limits} if limits is not None else {}))
    for transport in [client._transport, *client._mounts.values()]:  # proxies from the environment too
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = _DeadlineBackend(pool._network_backend)
        elif transport is not None and isinstance(transport, httpx2.HTTPTransport):
            raise RuntimeError("httpx2 changed: the judge client cannot enforce its total deadline")
    return client
