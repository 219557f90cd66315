"""A key and no network, in the attacker's words: "with ANTHROPIC_API_KEY set and the
network down, `vx ratchet` sends all 15 solver requests, retries each 6 times, and says nothing for 140 s
before 'connection failed'". The first uncached request goes alone, a connection that cannot be made is
retried twice, and each retry is said."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

anthropic = pytest.importorskip("anthropic")
httpx = pytest.importorskip("httpx")

from vx.cli.main import main  # noqa: E402
from vx.llm.cache import ResponseCache  # noqa: E402
from vx.llm.client import CONNECTION_RETRIES, LLMCallFailed, LLMClient  # noqa: E402
from vx.llm.config import load_config  # noqa: E402
from vx.ratchet.roles import send_many  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ratchet"


class Offline:
    """An SDK whose every call fails to connect (what anthropic raises without a network)."""

    def __init__(self, error: Exception) -> None:
        self.calls, self.error = 0, error
        self.messages = self

    def create(self, **request):
        self.calls += 1
        raise self.error


def unreachable() -> Exception:
    return anthropic.APIConnectionError(request=httpx.Request("POST", "https://api.anthropic.com/v1/messages"))


def overloaded() -> Exception:
    response = httpx.Response(529, request=httpx.Request("POST", "https://api.anthropic.com/v1/messages"))
    return anthropic.APIStatusError("overloaded", response=response, body=None)


def client(tmp_path: Path, sdk: Offline, slept: list[float]) -> LLMClient:
    config = load_config(overrides={"cache": str(tmp_path / "llm.sqlite")})
    return LLMClient(
        config, run_id="offline", sdk=sdk, cache=ResponseCache(tmp_path / "llm.sqlite"), sleep=slept.append
    )


def test_fifteen_requests_without_a_network_make_one_call_and_three_attempts(tmp_path, isolated_llm):
    sdk, slept, said = Offline(unreachable()), [], []
    c = client(tmp_path, sdk, slept)
    c.on_retry = said.append
    requests = [c.build_request("solver", f"task {k}") for k in range(15)]
    with pytest.raises(LLMCallFailed, match="connection failed.*is the network up"):
        send_many(c, "solver", requests, say=said.append)
    assert sdk.calls == 1 + CONNECTION_RETRIES == 3
    assert len(slept) == CONNECTION_RETRIES and sum(slept) <= 1.0 + 2.0  # full jitter below 1 s, then 2 s
    assert said[0] == "solver: 15 request(s) to the API"
    assert [m.split(";")[1].strip().split(" in ")[0] for m in said[1:]] == ["retry 1 of 2", "retry 2 of 2"]


def test_an_overloaded_api_still_gets_every_retry(tmp_path, isolated_llm):
    sdk, slept = Offline(overloaded()), []
    c = client(tmp_path, sdk, slept)
    with pytest.raises(LLMCallFailed, match="HTTP 529"):
        c.send("solver", c.build_request("solver", "task"))
    assert sdk.calls == 1 + c.config.max_retries


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: connecting is refused at once


def test_vx_ratchet_with_a_key_and_no_network_fails_fast_and_says_so(tmp_path, monkeypatch, isolated_llm):
    notes = tmp_path / "notes"
    shutil.copytree(FIXTURE, notes, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-offline-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    out = tmp_path / "run.vxratchet.sqlite"
    res = CliRunner().invoke(main, ["ratchet", str(notes), "--oracle", "--out", str(out), "-j", "1"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1, res.output
    assert "retry 1 of 2" in text and "retry 2 of 2" in text
    assert "failed after 3 attempts: connection failed" in text
    assert "0 API calls, 0 cache hits, 1 errors" in text  # one request tried, not the round's ten
