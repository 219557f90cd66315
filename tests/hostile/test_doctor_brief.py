"""`vx doctor --brief` on a fresh machine, in the attacker's words: "run the
README's test command as root where .ci/install-system.sh has not run: the long 'create the dedicated
account' warning wraps over two lines, and the test that reads the brief report line by line fails"."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vx.cli.main import main
from vx.doctor import Check

ACCOUNT_WARNING = (
    "running as root; candidates run as nobody (uid 65534, gid 65534); create the dedicated "
    "account: sudo bash .ci/install-system.sh"
)


def brief(monkeypatch, *extra: Check) -> list[str]:
    monkeypatch.setattr(
        "vx.doctor.doctor_report", lambda: [Check("sandbox layer", "ok", "bwrap - namespaces, seccomp"), *extra]
    )
    res = CliRunner().invoke(main, ["doctor", "--brief"])
    assert res.exit_code in (0, 1), res.output
    return res.output.splitlines()


@pytest.mark.parametrize("account", ["missing", "present"])
def test_the_brief_report_is_one_line_per_warning_whether_or_not_the_account_exists(monkeypatch, account):
    extra = [Check("sandbox account", "warn", ACCOUNT_WARNING)] if account == "missing" else []
    lines = brief(monkeypatch, *extra)
    assert lines[0] == "vx doctor: model code runs in bwrap"
    assert lines[1:] == ([f"  warn sandbox account: {ACCOUNT_WARNING}"] if extra else [])


def test_a_warning_longer_than_any_terminal_or_holding_newlines_stays_on_one_line(monkeypatch):
    long = "x" * 500
    lines = brief(monkeypatch, Check("  llm", "warn", f"first\nsecond\r\n{long}"), Check("seccomp", "fail", "no"))
    assert lines[1:] == [f"  warn llm: first second {long}", "  fail seccomp: no"]
