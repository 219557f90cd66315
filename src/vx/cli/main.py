"""The `vx` command: a thin click group; each command group lives in its own module.

To add a command, write `src/vx/cli/<name>.py` exposing a click command or group, and add
one line to COMMANDS below ("command name": "module:attribute").
"""

from __future__ import annotations

import importlib
import sys

import click

from vx import __version__

COMMANDS: dict[str, str] = {
    "check": "vx.cli.check:check",
    "fmt": "vx.cli.fmt:fmt",
    "eval": "vx.cli.eval:eval_cmd",
    "explain": "vx.cli.explain:explain_cmd",
    "ops": "vx.cli.ops:ops_cmd",
    "cache": "vx.cli.cache:cache_group",
    "report": "vx.cli.report:report_cmd",
    "llm": "vx.cli.llm:llm_group",
    "data": "vx.cli.data:data_group",
    "doctor": "vx.cli.doctor:doctor",
    "evolve": "vx.cli.evolve:evolve_cmd",
    "runs": "vx.cli.runs:runs_group",
    "compare": "vx.cli.compare:compare_cmd",
    "ratchet": "vx.cli.ratchet:ratchet_cmd",
    "matrix": "vx.cli.matrix:matrix_group",
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (keeps `vx --help` fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            module_name, attr = COMMANDS[name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vx")
def main() -> None:
    """vx: verifiers of AI-agent outputs as readable, evolvable expressions."""
    import os
    import uuid

    # One LLM run id per invocation, inherited by worker processes: judge ops share one budget.
    os.environ.setdefault("VX_LLM_RUN", "cli-" + uuid.uuid4().hex[:12])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
