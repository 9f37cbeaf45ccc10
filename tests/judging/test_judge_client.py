"""Judge calls through the real openai client against a local OpenAI-compatible server:
cache, retries, the errors a user sees, and the API key never leaving memory."""
import logging
import os
import socket
from functools import partial

import pytest
from fake_openai import Reply

from conftest import judge_config
from lib.errors import JudgeAPIError, MissingAPIKeyError
from lib.judging.batch import rejudge_one, run_batch
from lib.judging.cache import request_hash
from lib.judging.client import call_judge, make_client, request_preview
from lib.judging.config import JudgeConfig, resolve_api_key
from lib.judging import templates as T
from lib.judging.context import select_items

KEY = "sk-judgelens-test-KEY-7f3a9c21d4e8b6a0"
MSGS = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Rate: 2+2=4. 答え"}]


cfg = partial(judge_config, max_retries=3)     # the shared judge config, with up to 3 retries


# ------------------------------------------------------------------------------------------------
# Keys and configuration

def test_key_order_session_then_secrets_then_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert resolve_api_key("from-session", {"OPENAI_API_KEY": "from-secrets"}) == "from-session"
    assert resolve_api_key("  ", {"OPENAI_API_KEY": "from-secrets"}) == "from-secrets"
    assert resolve_api_key(None, {}) == "from-env"

    class Broken:  # st.secrets raises when there is no secrets.toml
        def get(self, key):
            raise FileNotFoundError("no secrets file")

    assert resolve_api_key(None, Broken()) == "from-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert resolve_api_key(None, None) is None
    assert "OPENAI_API_KEY" not in os.environ


def test_client_has_explicit_timeout_and_no_sdk_retries(server):
    client = make_client(cfg(server, timeout_s=7), KEY)
    assert client.max_retries == 0
    assert client.timeout.read == 7 and client.timeout.connect == 7
    with pytest.raises(MissingAPIKeyError, match="password field"):
        make_client(cfg(server), None)


def test_clients_share_one_tls_context_that_verifies_like_the_default(server, monkeypatch, tmp_path):
    """Loading the CA certificates cost ~30 ms of CPU per client (a client per batch, probe run and ladder step): the
    context is made once per process and environment, and verifies as httpx2's own default does."""
    import ssl

    import httpx2

    def tls(client):
        return client._client._transport._pool._ssl_context

    first = tls(make_client(cfg(server), KEY))
    assert tls(make_client(cfg(server, timeout_s=7), KEY)) is first
    default = httpx2.Client()._transport._pool._ssl_context
    assert (first.verify_mode, first.check_hostname) == (default.verify_mode, default.check_hostname) == (
        ssl.CERT_REQUIRED, True)
    assert first.get_ca_certs() == default.get_ca_certs() != []
    # SSL_CERT_FILE set afterwards (a file of one CA certificate): clients made then trust that file alone
    pem = open(ssl.get_default_verify_paths().openssl_cafile, encoding="utf-8").read()
    one = pem[pem.index("-----BEGIN CERTIFICATE-----"):pem.index("-----END CERTIFICATE-----")] + \
        "-----END CERTIFICATE-----\n"
    (tmp_path / "ca.pem").write_text(one)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    own = tls(make_client(cfg(server), KEY))
    assert own is not first and len(own.get_ca_certs()) == 1 and own.verify_mode == ssl.CERT_REQUIRED
    assert tls(make_client(cfg(server), KEY)) is own


@pytest.mark.parametrize("kwargs, message", [
    ({"base_url": "api.openai.com/v1"}, "must start with http"),
    ({"model": " "}, "Name the judge model"),
    ({"timeout_s": 0}, "timeout_s"),
    ({"timeout_s": 601}, "timeout_s"),
    ({"max_tokens_param": "n"}, "max_tokens_param"),
])
def test_config_is_checked(kwargs, message):
    base = dict(base_url="http://127.0.0.1:1/v1", model="m")
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        JudgeConfig(**base)


def test_request_hash_covers_url_model_messages_params_not_timeouts(server):
    c = cfg(server)
    h = request_hash(c, MSGS)
    assert h == request_hash(JudgeConfig(base_url=server.url + "/", model="judge-x", timeout_s=30), MSGS)
    assert h == request_hash(cfg(server, max_retries=0, timeout_s=1), MSGS)
    for other in (cfg(server, model="judge-y"), cfg(server, temperature=0.7), cfg(server, max_tokens=10),
                  cfg(server, base_url="http://127.0.0.1:9/v1")):
        assert request_hash(other, MSGS) != h
    assert request_hash(c, MSGS[:1]) != h
    assert KEY not in request_preview(c, MSGS).__repr__()


# ------------------------------------------------------------------------------------------------
# Calls and the cache

def test_call_sends_the_key_and_the_request_and_caches(store, server):
    server.queue(Reply("Fine. Rating: [[9]]", prompt_tokens=120, completion_tokens=7))
    c = cfg(server)
    r = call_judge(store, c, MSGS, api_key=KEY)
    assert (r.text, r.cached, r.prompt_tokens, r.completion_tokens, r.attempts) == ("Fine. Rating: [[9]]", False, 120, 7, 1)
    (req,) = server.chat_requests()
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {"model": "judge-x", "messages": MSGS, "temperature": 0.0, "max_tokens": 2048}
    again = call_judge(store, c, MSGS, api_key=KEY)
    assert again.cached and again.text == r.text and len(server.chat_requests()) == 1
    assert call_judge(store, c, MSGS).cached  # a cache hit needs no key
    server.queue("Rating: [[3]]")
    forced = call_judge(store, c, MSGS, api_key=KEY, force=True)
    assert (forced.cached, forced.text) == (False, "Rating: [[3]]") and len(server.chat_requests()) == 2
    assert call_judge(store, c, MSGS, api_key=KEY).text == "Rating: [[3]]"  # force overwrote the cache
    with store.read() as cur:
        (n, request) = cur.execute("SELECT count(*), any_value(request) FROM judge_cache").fetchone()
    assert n == 1 and '"messages"' in request and KEY not in request


def test_max_completion_tokens_parameter(store, server):
    call_judge(store, cfg(server, max_tokens_param="max_completion_tokens", max_tokens=99), MSGS, api_key=KEY)
    body = server.chat_requests()[0].body
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body


# ------------------------------------------------------------------------------------------------
# Retries

def test_429_then_success_honours_retry_after_ms(store, server):
    server.queue(Reply.rate_limited(retry_after_ms=150), Reply.rate_limited(retry_after_ms=150), "Rating: [[6]]")
    waits = []   # the waits between attempts, recorded instead of slept
    r = call_judge(store, cfg(server), MSGS, api_key=KEY, sleep=waits.append)
    assert (r.text, r.attempts) == ("Rating: [[6]]", 3)
    assert waits == [0.15, 0.15] and len(server.chat_requests()) == 3


def test_429_retry_after_seconds(store, server):
    server.queue(Reply.rate_limited(retry_after=1), "Rating: [[6]]")
    waits = []
    assert call_judge(store, cfg(server), MSGS, api_key=KEY, sleep=waits.append).attempts == 2
    assert waits == [1.0]          # what the server asked, not our 0.01 s backoff


def test_retry_after_beyond_the_cap_fails_at_once(store, server):
    server.queue(Reply.rate_limited(retry_after=1000))
    waits = []
    with pytest.raises(JudgeAPIError, match=r"rate limited.*asks to wait 1000 s.*more than the 60 s") as exc:
        call_judge(store, cfg(server), MSGS, api_key=KEY, sleep=waits.append)
    assert waits == [] and len(server.chat_requests()) == 1 and exc.value.status == 429   # no wait, no retry


def test_5xx_retried_with_backoff_then_gives_up(store, server):
    server.queue(Reply.server_error(500), Reply.server_error(503), "Rating: [[4]]")
    waits = []
    assert call_judge(store, cfg(server), MSGS, api_key=KEY, sleep=waits.append).attempts == 3
    # backoff_base_s * 2**n plus 0-25 % jitter, capped at backoff_cap_s (0.05)
    assert len(waits) == 2 and 0.01 <= waits[0] <= 0.0125 and 0.02 <= waits[1] <= 0.025, waits
    server.queue(*[Reply.server_error(502)] * 5)
    with pytest.raises(JudgeAPIError, match=r"HTTP 502.*Gave up after 3 attempt") as exc:
        call_judge(store, cfg(server, max_retries=2), MSGS, api_key=KEY, force=True, sleep=waits.append)
    assert not exc.value.fatal and len(server.chat_requests()) == 3 + 3 and len(waits) == 2 + 2


@pytest.mark.parametrize("status, fatal, message", [
    (401, True, "API key was refused"),
    (403, True, "access denied"),
    (404, True, "check the base URL"),
    (400, False, r"refused the request \(400"),
    (422, False, "422"),
])
def test_client_errors_are_not_retried_and_explain_themselves(store, server, status, fatal, message):
    server.queue(Reply.error(status, f"nope, key {KEY} is bad"))
    with pytest.raises(JudgeAPIError, match=message) as exc:
        call_judge(store, cfg(server), MSGS, api_key=KEY)
    assert exc.value.fatal is fatal and exc.value.status == status
    assert len(server.chat_requests()) == 1
    assert KEY not in exc.value.message and "***" in exc.value.message  # the echoed key is redacted


def test_timeout_is_ours_not_ten_minutes(store, server):
    # The server holds each request for 10 s and then hangs up without an answer. Only our 0.3 s limit turns
    # that into a timeout; under the SDK's 10-minute default the hang-up would be a connection error instead.
    server.queue(Reply.hang_for(10), Reply.hang_for(10))
    with pytest.raises(JudgeAPIError, match=r"no answer within 0.3 s \(timeout\).*2 attempt") as exc:
        call_judge(store, cfg(server, timeout_s=0.3, max_retries=1), MSGS, api_key=KEY, sleep=lambda s: None)
    assert exc.value.attempts == 2 and len(server.chat_requests()) == 2


@pytest.mark.parametrize("body, message", [
    (b'{"id": "x", "choices": [ not json', "malformed body"),
    (b'{"foo": 1}', "not a chat completion"),
    (b"[]", "not a chat completion"),
    (b'{"choices": [{"message": {"content": 5}}]}', "non-text"),
    (b"<html>proxy error</html>", "malformed body"),
])
def test_malformed_bodies(store, server, body, message):
    server.queue(Reply.malformed(body))
    with pytest.raises(JudgeAPIError, match=message):
        call_judge(store, cfg(server), MSGS, api_key=KEY)


def test_connection_refused_is_retried_then_explained(store):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = JudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1, backoff_base_s=0.01)
    with pytest.raises(JudgeAPIError, match=f"Could not connect to http://127.0.0.1:{port}/v1.*2 attempt"):
        call_judge(store, c, MSGS, api_key=KEY)


# ------------------------------------------------------------------------------------------------
# The key is never persisted

def test_key_never_reaches_the_store_logs_or_environment(sample_store, server, caplog, capfd, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    env_before = dict(os.environ)
    caplog.set_level(logging.DEBUG)  # every logger, including openai's and httpx's debug output
    server.responder = lambda body: f"Rating: [[{len(body['messages'][-1]['content']) % 10 + 1}]]"
    server.queue(Reply.rate_limited(retry_after_ms=10), Reply.error(400, f"bad request for {KEY}"))
    template = T.get_template(sample_store, "single-v1")
    items = select_items(sample_store, bench="ja_mt_bench", turn=1, limit=30)
    summary = run_batch(sample_store, template, cfg(server), items, "leak-check", concurrency=4, api_key=KEY)
    assert summary.written == 30 and summary.api_errors == 1
    call_judge(sample_store, cfg(server), MSGS, api_key=KEY, force=True)
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.chat_requests())
    with sample_store.read() as cur:  # the server echoed the key in an error: the stored api_error text is redacted
        (stored,) = cur.execute("SELECT rationale FROM single_judgments WHERE parse_status = 'api_error'").fetchone()
        assert "bad request for ***" in stored
        cur.execute("CHECKPOINT")
    path = sample_store.path
    sample_store.close()
    for f in path.parent.glob(path.name + "*"):
        assert KEY.encode() not in f.read_bytes(), f
    assert KEY not in caplog.text
    out, err = capfd.readouterr()
    assert KEY not in out and KEY not in err
    assert dict(os.environ) == env_before and KEY not in os.environ.values()


def test_a_single_rejudge_without_storing_a_verdict(sample_store, server):
    server.queue("Meh. Rating: [[4]]")
    template = T.get_template(sample_store, "ja-single-v1")
    item = select_items(sample_store, bench="ja_mt_bench", turn=1, judged_by="gpt-4o", limit=1)[0]
    out = rejudge_one(sample_store, template, cfg(server, price_per_1k_input=1.0, price_per_1k_output=2.0), item,
                        api_key=KEY, judge_hint="gpt-4o")
    assert out["parsed"].score == 4 and not out["cached"] and out["cost"] > 0
    assert out["messages"][1]["content"] == server.chat_requests()[0].body["messages"][1]["content"]
    with sample_store.read() as cur:
        assert cur.execute("SELECT count(*) FROM single_judgments WHERE harness = 'judgelens'").fetchone()[0] == 0
