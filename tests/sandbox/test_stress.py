"""Many candidates at once, friendly and hostile mixed, from several threads (slow)."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from vx.sandbox import Sandbox, SandboxConfig

from .conftest import processes_with, wait_until_gone

pytestmark = pytest.mark.slow


def test_concurrent_mixed_candidates_stay_separate(sb: Sandbox) -> None:
    token = f"vx-stress-{uuid.uuid4().hex}"
    quick = Sandbox(SandboxConfig(layer=sb.layer, per_call_timeout=0.3, total_timeout=5.0, kill_grace=0.3))
    daemon = (
        "import os, sys\n"
        "def f(x):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        os.execv(sys.executable, [sys.executable, '-S', '-c', 'import time; time.sleep(30)', "
        f"{token[:6]!r} + {token[6:]!r}])\n"
        "    return x\n"
    )
    kinds = {
        "ok": ("def f(x):\n    return x * 2\n", lambda x: ("ok", [x * 2])),
        "raise": ("def f(x):\n    raise ValueError(x)\n", lambda x: ("ok", ["exception"])),
        "loop": ("def f(x):\n    while True:\n        pass\n", lambda x: ("ok", ["timeout"])),
        "exit": ("import os\ndef f(x):\n    os._exit(3)\n", lambda x: ("crashed", ["crashed"])),
        "daemon": (daemon, lambda x: ("ok", [x])),
        "global": (
            "import builtins\ndef f(x):\n    builtins.seen = getattr(builtins, 'seen', 0) + 1\n"
            "    return builtins.seen\n",
            lambda x: ("ok", [1]),
        ),
    }
    jobs = [(name, i) for i in range(12) for name in kinds]

    def run(job):
        name, x = job
        code, expect = kinds[name]
        rep = quick.run_calls(code, "f", [([x], {})], args_after=False)
        outcome = rep.calls[0]
        got = outcome.value if outcome.status == "ok" else outcome.status
        return name, (rep.status, [got]) == expect(x), (rep.status, got, rep.detail)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, jobs))
    wrong = [(name, info) for name, good, info in results if not good]
    assert not wrong, wrong[:5]
    assert Counter(name for name, _, _ in results) == {name: 12 for name in kinds}
    left = wait_until_gone(token, within=3.0)
    for pid in left:
        os.kill(pid, 9)
    assert not left and not processes_with(token)
