"""Nothing offline needs the anthropic package: vx imports and judge ops abstain without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_vx_works_without_anthropic_installed(tmp_path):
    script = textwrap.dedent("""
        import sys
        sys.modules["anthropic"] = None          # `import anthropic` now fails as if not installed
        import vx.llm, vx.llm.client, vx.llm.config, vx.llm.cache, vx.ops.judge, vx.evolve.roles.teacher
        import vx.evolve.roles.composer, vx.evolve.roles.synthesizer, vx.evolve.roles.session, vx.doctor, vx.cli.llm
        from vx.families.code.ops.judge import spec_mismatch
        from vx.evolve.roles.session import start_session
        assert start_session(None, mode=None, say=print) is None
        r = spec_mismatch({"prompt": "def f(): ..."}, "def f(): return 1")
        print(int(r.verdict), r.message)
    """)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "VX_LLM_CONFIG": str(tmp_path / "none.toml")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("LLM roles are off: set ANTHROPIC_API_KEY")  # said once
    assert lines[1].startswith("-1 LLM roles are off")  # the judge op abstains
    assert len(lines) == 2
