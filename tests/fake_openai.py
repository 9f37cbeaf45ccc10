"""A local OpenAI-compatible chat completions server for tests and benchmarks.

``FakeOpenAI`` runs ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (a free port) in a background
thread and answers ``POST /v1/chat/completions``. What it answers is scripted per request:

- ``server.queue(reply, ...)``: replies used first, in order (one per request);
- ``server.responder = fn``: ``fn(body: dict) -> Reply | str`` for requests the queue does not
  cover (e.g. a score that depends on the messages); a ``str`` is the completion text;
- otherwise ``server.default`` (``"Rating: [[5]]"``).

A ``Reply`` can be a normal completion (``Reply("text")``), an HTTP error with headers
(``Reply.rate_limited(retry_after=1)``, ``Reply.server_error()``, ``Reply.error(401, ...)``), a
malformed body (``Reply.malformed()``), a hang (``Reply.hang_for(seconds)``, for client timeouts), a
drip (``Reply.dripping(every=1.0)``: headers at once, then the body one byte per ``every`` seconds, which no
per-read timeout ever catches), and any of them with extra ``delay``. ``latency`` delays every request. Every request is recorded
(``server.requests``: path, headers, parsed JSON body, time) so tests can check what the client sent,
e.g. the Authorization header.

Usage::

    with FakeOpenAI(latency=0.01) as server:
        client = OpenAI(api_key="sk-test", base_url=server.url)   # server.url ends in /v1
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Reply:
    text: str | None = "Rating: [[5]]"
    status: int = 200
    headers: dict = field(default_factory=dict)
    body: bytes | None = None          # raw body (overrides everything): for malformed responses
    delay: float = 0.0                 # extra seconds before answering
    hang: float = 0.0                  # sleep this long (or until the server stops) and send nothing useful
    drip: float = 0.0                  # > 0: send the headers, then one body byte every `drip` seconds
    drip_headers: bool = False         # with drip: the status line and headers drip too
    prompt_tokens: int | None = None   # default: characters of the messages / 4
    completion_tokens: int | None = None
    error_message: str = "error"

    @classmethod
    def rate_limited(cls, retry_after: float | None = None, retry_after_ms: float | None = None) -> "Reply":
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        return cls(None, status=429, headers=headers, error_message="Rate limit reached")

    @classmethod
    def server_error(cls, status: int = 500) -> "Reply":
        return cls(None, status=status, error_message="The server had an error")

    @classmethod
    def error(cls, status: int, message: str = "error") -> "Reply":
        return cls(None, status=status, error_message=message)

    @classmethod
    def malformed(cls, body: bytes = b'{"id": "x", "choices": [ this is not json') -> "Reply":
        return cls(None, body=body)

    @classmethod
    def hang_for(cls, seconds: float) -> "Reply":
        return cls(None, hang=seconds)

    @classmethod
    def dripping(cls, every: float = 1.0, text: str = "Rating: [[5]]", headers_too: bool = False) -> "Reply":
        return cls(text, drip=every, drip_headers=headers_too)


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict | None
    received_at: float


class FakeOpenAI:
    def __init__(self, latency: float = 0.0, default: str = "Rating: [[5]]"):
        self.latency = latency
        self.default = default
        self.responder: Callable[[dict], "Reply | str"] | None = None
        self.requests: list[Recorded] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.in_flight = 0
        self.max_in_flight = 0

    # -- scripting
    def queue(self, *replies: "Reply | str") -> None:
        with self._lock:
            for r in replies:
                self._queue.append(Reply(r) if isinstance(r, str) else r)

    def _next_reply(self, body: dict | None) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None and body is not None:
            r = self.responder(body)
            return Reply(r) if isinstance(r, str) else r
        return Reply(self.default)

    # -- lifecycle
    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with fake._lock:
                    fake.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self._answer(body)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _answer(self, body):
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                reply = fake._next_reply(body)
                wait = fake.latency + reply.delay
                if wait:
                    fake._stop.wait(wait)
                if reply.hang:
                    fake._stop.wait(reply.hang)
                    try:
                        self.close_connection = True
                        self.wfile.write(b"")
                    except OSError:
                        pass
                    return
                if reply.body is not None:
                    return self._send_raw(200, reply.body, {"Content-Type": "application/json"})
                if reply.status != 200:
                    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(reply.status, "server_error")
                    return self._send(reply.status, {"error": {"message": reply.error_message, "type": kind,
                                                               "code": kind}}, reply.headers)
                messages = (body or {}).get("messages") or []
                chars = sum(len(str(m.get("content") or "")) for m in messages)
                text = reply.text or ""
                pt = reply.prompt_tokens if reply.prompt_tokens is not None else max(1, chars // 4)
                ct = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(text) // 4)
                send = self._send_drip if reply.drip else self._send
                send(200, {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                    "model": (body or {}).get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
                }, reply.headers, *([reply.drip, reply.drip_headers] if reply.drip else []))

            def _send_drip(self, status, obj, headers, every, headers_too=False):
                data = json.dumps(obj).encode()
                if headers_too:
                    head = "".join(f"{k}: {v}\r\n" for k, v in {"Content-Type": "application/json", **(headers or {}),
                                                                  "Content-Length": len(data)}.items())
                    data = f"HTTP/1.1 {status} OK\r\n{head}\r\n".encode() + data
                try:
                    if headers_too:
                        self.close_connection = True
                    else:
                        self.send_response(status)
                        for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                            self.send_header(k, v)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.flush()
                    for i in range(len(data)):
                        if fake._stop.wait(every):
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                except OSError:
                    pass

            def _send(self, status, obj, headers=None):
                self._send_raw(status, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})})

            def _send_raw(self, status, data: bytes, headers: dict):
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

            def handle_error(self, request, client_address):  # a client that hangs up is not news
                import sys

                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- helpers for assertions
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]
