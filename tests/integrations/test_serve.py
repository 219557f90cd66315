"""`vx serve`: a real server (the `vx serve` command in its own process, on 127.0.0.1, a free port) and
a real HTTP client (httpx). Grading, groups graded together (a peer op fails the odd attempt out), the
errors, concurrent clients (none lost, every answer the verifier's own), and a clean shutdown on
SIGTERM that finishes the request in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
HUMANEVAL = ROOT / "examples" / "humaneval"


def _task(i: int = 0) -> dict:
    return json.loads((HUMANEVAL / "tasks.jsonl").read_text().splitlines()[i])


def _group() -> list[str]:
    good = _task()["reference"]
    return [
        good,
        good.replace("for idx, elem", "for idx,  elem"),
        good.replace("distance = ", "distance  = "),
        _task()["prompt"] + "    return len(numbers) > 4\n",
    ]


class Server:
    def __init__(self, *args: str, wait_for: str = "127.0.0.1") -> None:
        cmd = [
            sys.executable,
            "-c",
            "import sys; from vx.cli.main import main; sys.exit(main())",
            "serve",
            *args,
            "--port",
            "0",
        ]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        line = self.proc.stdout.readline()  # printed once the socket listens
        assert f"on http://{wait_for}:" in line, line + self.proc.stderr.read()
        self.url = line.split(" on ", 1)[1].split()[0]

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, err


def _start(directory: Path) -> Server:
    expr = directory / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example timeout)\n")
    return Server(
        str(expr), "--family", str(HUMANEVAL), "--timeout", "3", "--max-solutions", "8", "--max-body", "200000"
    )


@pytest.fixture(scope="module")
def peers_server(tmp_path_factory):
    """One server for the tests that leave it running (starting one loads vx and the family: seconds)."""
    server = _start(tmp_path_factory.mktemp("serve"))
    yield server
    server.stop()


@pytest.fixture
def own_server(tmp_path):
    server = _start(tmp_path)
    yield server
    server.stop()


def test_grade_one_solution_and_a_group_over_http(peers_server):
    with httpx.Client(base_url=peers_server.url, timeout=120) as client:
        health = client.get("/health").json()
        assert health["status"] == "ok" and health["tasks"] > 100 and "disagrees_with_peers" in health["expression"]
        one = client.post("/grade", json={"task_id": "HumanEval/0", "solution": _group()[3]})
        assert one.status_code == 200
        body = one.json()
        # alone, the wrong attempt passes the visible examples and the peer op abstains, saying why
        assert body["verdict"] == "pass" and body["results"][0]["ops"]["disagrees_with_peers"]["verdict"] == "abstain"
        assert body["results"][0]["ops"]["parses"]["verdict"] == "clean"
        group = client.post("/grade", json={"task_id": "HumanEval/0", "solutions": _group()}).json()
        assert [r["verdict"] for r in group["results"]] == ["pass", "pass", "pass", "fail"] and "verdict" not in group
        assert group["results"][3]["drawbacks"][0]["op"] == "disagrees_with_peers"
        assert (
            group["results"][3]["drawbacks"][0]["message"]
            == group["results"][3]["ops"]["disagrees_with_peers"]["message"]
        )


def test_a_group_is_ranked_in_one_request(peers_server):
    """Best of n over HTTP: "rank": true adds each solution's rank, score, support and reason, and the index of
    the best; the wrong attempt, sent first, ranks last."""
    group = [_group()[3], *_group()[:3]]
    r = httpx.post(peers_server.url + "/grade", json={"task_id": "HumanEval/0", "solutions": group, "rank": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [x["verdict"] for x in body["results"]] == ["fail", "pass", "pass", "pass"]
    assert body["results"][0]["rank"] == 4 and sorted(x["rank"] for x in body["results"]) == [1, 2, 3, 4]
    assert body["best"] in (1, 2, 3) and body["results"][body["best"]]["rank_reason"].startswith("rank 1 of 4: PASS")
    r = httpx.post(peers_server.url + "/grade", json={"task_id": "HumanEval/0", "solutions": group, "rank": "yes"})
    assert r.status_code == 400 and '"rank" is true' in r.json()["error"]


def test_errors_are_json_with_a_message(peers_server):
    with httpx.Client(base_url=peers_server.url, timeout=120) as client:

        def error(status, **kw):
            r = client.post("/grade", **kw)
            assert r.status_code == status, r.text
            return r.json()["error"]

        assert "not JSON" in error(400, content=b"{nope", headers={"Content-Type": "application/json"})
        assert '"task_id"' in error(400, json={"solution": "x"})
        assert "exactly one of" in error(400, json={"task_id": "HumanEval/0", "solution": "x", "solutions": ["y"]})
        assert "list of strings" in error(400, json={"task_id": "HumanEval/0", "solutions": [1]})
        assert "at most 8" in error(413, json={"task_id": "HumanEval/0", "solutions": ["x"] * 9})
        assert "larger than 200000 bytes" in error(413, json={"task_id": "HumanEval/0", "solution": "x" * 300_000})
        assert "'HumanEval/999' is not a task" in error(404, json={"task_id": "HumanEval/999", "solution": "x"})
        assert client.get("/grade").status_code == 405


@pytest.mark.slow
def test_concurrent_clients_all_answered_with_the_verifier_s_own_verdicts(peers_server):
    from vx.verifier import Verifier

    tasks = [_task(i) for i in range(6)]
    posts = [(t["id"], t["reference"]) for t in tasks] + [(t["id"], t["prompt"] + "    return None\n") for t in tasks]
    posts = posts * 2  # 24 requests, 12 clients at once
    with httpx.Client(base_url=peers_server.url, timeout=300) as client, ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda p: client.post("/grade", json={"task_id": p[0], "solution": p[1]}), posts))
    assert [a.status_code for a in answers] == [200] * len(posts)
    v = Verifier.load(Path(peers_server.proc.args[4]), HUMANEVAL)
    expected = {p: v.grade(p[0], p[1]).verdict.value for p in set(posts)}
    assert [a.json()["verdict"] for a in answers] == [expected[p] for p in posts]
    assert {a.json()["task_id"] for a in answers} == {t["id"] for t in tasks}
    with httpx.Client(base_url=peers_server.url) as client:
        health = client.get("/health").json()
    assert health["in_flight"] == 0 and health["graded"] >= len(posts)


def test_sigterm_finishes_the_request_in_flight_then_exits_0(own_server):
    import threading

    looping = _task()["prompt"] + "    while True:\n        pass\n"
    result = {}
    with httpx.Client(base_url=own_server.url, timeout=300) as client:
        thread = threading.Thread(
            target=lambda: result.setdefault(
                "r", client.post("/grade", json={"task_id": "HumanEval/0", "solution": looping})
            )
        )
        thread.start()
        while client.get("/health").json()["in_flight"] == 0:  # the request is being graded
            pass
        own_server.proc.send_signal(signal.SIGTERM)
        thread.join()
    _, err = own_server.proc.communicate(timeout=120)  # one signal only: a second one may end the exit itself
    code = own_server.proc.returncode
    assert result["r"].status_code == 200
    assert result["r"].json()["verdict"] == "fail"  # graded to the end (the loop hit the time limit)
    assert code == 0 and "vx serve: stopped" in err


def test_a_port_in_use_is_a_clear_error(peers_server):
    port = peers_server.url.rsplit(":", 1)[1]
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from vx.cli.main import main; sys.exit(main())",
            "serve",
            str(HUMANEVAL / "seed.vx"),
            "--port",
            port,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in res.stderr
