"""`vx serve` attacked as a web page, a slow client and a careless one would: each attack is a test written as the
attack, against a real server (the `vx serve` command on 127.0.0.1, a free port) and a real client. Also the
trainer's side: a group with a completion that loops, floods its output or forks answers before its deadline,
the others keep their verdicts; a full queue is a 429 with Retry-After; /metrics is Prometheus text."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from .test_serve import HUMANEVAL, Server, _group, _task

httpx = pytest.importorskip("httpx")
pytest.importorskip("prometheus_client")

JSON = {"Content-Type": "application/json"}


def _serve(tmp_path, *extra: str) -> Server:
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example timeout crash)\n")
    return Server(str(expr), "--family", str(HUMANEVAL), "--timeout", "3", *extra)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = _serve(tmp_path_factory.mktemp("attacks"), "--header-timeout", "2", "--body-timeout", "2")
    yield s
    s.stop()


def _no_traceback(server: Server) -> str:
    """Stops the server and returns its stderr, which must hold no traceback."""
    code, err = server.stop()
    assert "Traceback" not in err and code == 0, err[-3000:]
    return err


def test_a_web_page_cannot_make_it_grade(server):
    """CSRF: a page posts a 'simple request' (text/plain, no preflight) from its own origin."""
    ok = json.dumps({"task_id": "HumanEval/0", "solution": "x = 1"})
    with httpx.Client(base_url=server.url, timeout=120) as client:
        simple = client.post(
            "/grade", content=ok, headers={"Content-Type": "text/plain", "Origin": "http://evil.example"}
        )
        assert simple.status_code == 403 and "web page 'http://evil.example'" in simple.json()["error"]
        plain = client.post("/grade", content=ok, headers={"Content-Type": "text/plain"})
        assert plain.status_code == 415 and "Content-Type: application/json" in plain.json()["error"]
        form = client.post("/grade", data={"task_id": "HumanEval/0"})
        assert form.status_code == 415
        foreign = client.post("/grade", content=ok, headers={**JSON, "Origin": "https://evil.example"})
        assert foreign.status_code == 403
        same = client.post("/grade", content=ok, headers={**JSON, "Origin": server.url})
        assert same.status_code == 200


def test_dns_rebinding_a_foreign_host_is_refused(server):
    """DNS rebinding: a page's own name now resolves to 127.0.0.1; the request carries that name as its Host."""
    port = server.url.rsplit(":", 1)[1]
    with httpx.Client(base_url=server.url, timeout=120) as client:
        rebound = client.get("/health", headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 403 and "does not name this server" in rebound.json()["error"]
        assert client.get("/health", headers={"Host": f"localhost:{port}"}).status_code == 200
        assert client.get("/health").status_code == 200


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"[" * 100_000, "nested too deeply"),
        (b'{"task_id": "HumanEval/0", "solution": ' + b"9" * 5000 + b"}", "integer string conversion"),
        (b"\xff\xfe{}", "not JSON"),
        (b'{"task_id": "HumanEval/0", "solution": "x"', "not JSON"),
        (b"", "not JSON"),
        (b"null", "a JSON object"),
        (b'{"task_id": ["HumanEval/0"], "solution": "x"}', '"task_id"'),
        (b'{"task_id": "HumanEval/0", "solution": "x", "deadline": -1}', '"deadline"'),
    ],
)
def test_every_malformed_body_is_a_400_with_a_message(server, body, words):
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for path in ("/grade", "/openrlhf", "/verl"):
            r = client.post(path, content=body, headers=JSON)
            assert r.status_code == 400, (path, r.text)
            if path == "/grade":
                assert words in r.json()["error"]


def test_slowloris_300_half_open_sockets_do_not_make_other_requests_fail(server):
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    socks = []
    try:
        for _ in range(300):
            s = socket.create_connection((host, int(port)), timeout=30)
            s.sendall(b"POST /grade HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")  # never ends
            socks.append(s)
        with httpx.Client(base_url=server.url, timeout=120) as client:
            for _ in range(5):
                assert client.get("/health").status_code == 200
            r = client.post("/grade", json={"task_id": "HumanEval/0", "solution": _task()["reference"]})
            assert r.status_code == 200 and r.json()["verdict"] == "pass"
        # the half-open sockets are closed by the server once their header time is up (2 s here)
        for s in socks:
            s.settimeout(120)
            assert s.recv(100) == b""
    finally:
        for s in socks:
            s.close()


def test_a_body_that_never_arrives_is_a_408(server):
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=120) as s:
        s.sendall(
            b"POST /grade HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408") and b"not received within 2 s" in answer


def test_client_disconnects_leave_no_traceback(tmp_path):
    server = _serve(tmp_path)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    looping = _task()["prompt"] + "    while True:\n        pass\n"
    body = json.dumps({"task_id": "HumanEval/0", "solution": looping}).encode()
    for cut in (len(body), 10):  # gone while graded; gone in the middle of its body
        with socket.create_connection((host, int(port)), timeout=60) as s:
            head = (
                "POST /grade HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            s.sendall(head.encode() + body[:cut])
            time.sleep(0.5)
    with httpx.Client(base_url=server.url, timeout=120) as client:
        while client.get("/health").json()["in_flight"]:
            time.sleep(0.2)
    _no_traceback(server)


def test_bound_beyond_loopback_it_warns_and_a_token_is_required(tmp_path):
    expr = tmp_path / "seed.vx"
    expr.write_text("(any fails_visible_example)\n")
    token = "s3cret-token-0123456789"
    server = Server(str(expr), "--family", str(HUMANEVAL), "--host", "0.0.0.0", "--token", token, wait_for="0.0.0.0")
    try:
        port = server.url.rsplit(":", 1)[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            assert client.get("/health").status_code == 401
            auth = {"Authorization": f"Bearer {token}"}
            assert client.get("/health", headers=auth).status_code == 200
            assert client.get("/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert client.get("/health", headers={**auth, "Host": f"evil.example:{port}"}).status_code == 403
    finally:
        err = _no_traceback(server)
    assert (
        "warning: listening on 0.0.0.0, reachable from other machines" in err and "every request needs the token" in err
    )


def test_a_group_answers_by_its_deadline_the_bad_completions_say_why_the_others_keep_their_verdicts(server):
    prompt = _task()["prompt"]
    loops = prompt + "    while True:\n        pass\n"
    floods = prompt + "    while True:\n        print('x' * 10000)\n"
    forks = prompt + "    import os\n    while True:\n        os.fork()\n"
    group = _group() + [loops, floods, forks]
    with httpx.Client(base_url=server.url, timeout=300) as client:
        t0 = time.monotonic()
        r = client.post("/grade", json={"task_id": "HumanEval/0", "solutions": group, "deadline": 60})
        took = time.monotonic() - t0
        assert r.status_code == 200 and took < 60 + 30  # the answer comes by the deadline (plus the HTTP round trip)
        results = r.json()["results"]
        assert [x["verdict"] for x in results[:4]] == ["pass", "pass", "pass", "fail"]  # the peers still vote
        for bad in results[4:]:
            assert bad["verdict"] in ("fail", "abstain")
            assert bad["drawbacks"] or bad["reason"], bad
        # a deadline too short for a looping completion: it abstains with the reason, a cached peer keeps its verdict
        client.post("/grade", json={"task_id": "HumanEval/0", "solution": _group()[0]})
        short = client.post(
            "/grade", json={"task_id": "HumanEval/0", "solutions": [_group()[0], loops + "\n"], "deadline": 0.05}
        )
        first, second = short.json()["results"]
        assert first["verdict"] == "pass" and second["verdict"] == "abstain" and second["reason"] == "deadline"
        assert "not graded within the request's deadline (0.05 s)" in json.dumps(second["ops"])
        metrics = client.get("/metrics").text
    assert 'vx_abstentions_total{reason="deadline"}' in metrics
    for name in (
        "vx_requests_total",
        "vx_group_seconds_bucket",
        "vx_cache_hits_total",
        "vx_queue_depth",
        "vx_completions_total",
    ):
        assert name in metrics


def test_a_full_queue_is_a_429_with_retry_after(tmp_path):
    server = _serve(tmp_path, "--max-queue", "2", "--jobs", "1")
    looping = _task()["prompt"] + "    while True:\n        pass\n"
    result = {}
    try:
        with httpx.Client(base_url=server.url, timeout=300) as client:
            t = threading.Thread(
                target=lambda: result.setdefault(
                    "r", client.post("/grade", json={"task_id": "HumanEval/0", "solutions": [looping, looping + " "]})
                )
            )
            t.start()
            while client.get("/health").json()["in_flight"] == 0:
                time.sleep(0.01)
            refused = client.post("/grade", json={"task_id": "HumanEval/0", "solution": "x = 1"})
            t.join()
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "waiting to be graded (at most 2)" in refused.json()["error"]
        assert result["r"].status_code == 200
    finally:
        _no_traceback(server)
