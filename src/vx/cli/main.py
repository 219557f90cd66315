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
    "grade": "vx.cli.grade:grade_cmd",
    "serve": "vx.cli.serve:serve_cmd",
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
    "anchor": "vx.cli.anchor:anchor_group",
}


#: Each command's one-line help, so that `vx --help` lists the commands without importing any of
#: them (tests/cli/test_cli_consistency.py checks these against the commands' own help). A command
#: missing here still works; `vx --help` then imports it to read its help.
SHORT_HELP: dict[str, str] = {
    "anchor": "The ten-item anchor: which unlabeled items to label, and the labels (dev split) themselves.",
    "cache": "Inspect or clear the verdict cache.",
    "check": "Check .vx files: syntax, unknown ops (with the nearest names), duplicate children, vote K out "
    "of range, and subtrees that can never fire or never be clean.",
    "compare": "Compare two verifiers (or seed vs evolved over several runs) on a labeled split.",
    "data": "Build task families from datasets.",
    "doctor": "Show which sandbox layer is active (and why stronger ones are not), and other checks.",
    "eval": "Evaluate the verifier EXPR.vx on a split of its family.",
    "evolve": "Evolve FAMILY's verifier against its dev anchor; audit it on the locked split.",
    "explain": "Explain the verdict of EXPR.vx on one item: the tree with each node's verdict.",
    "fmt": "Print .vx files in canonical form, rewriting them in place.",
    "grade": "Grade every sample in SAMPLES.jsonl... with VERIFIER.vx and print pass@k.",
    "llm": "LLM roles: configuration, reachability, teacher labels, usage.",
    "matrix": "Verdict matrix files (vx-matrix/1, written by `vx eval --out` / `--shard`).",
    "ops": "List the ops of a family (default: the family around the current directory).",
    "ratchet": "Run the skill loop on FAMILY with one or more graders and compare their held-out lift.",
    "report": "Write an HTML page (viewable offline) for a run file or an evaluation.",
    "runs": "Inspect evolution runs (the .vxrun.sqlite files `vx evolve` writes).",
    "serve": "Serve VERIFIER.vx over HTTP for RL trainers and agent loops.",
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (keeps `vx --help` fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from SHORT_HELP (no command module is imported to print `vx --help`)."""
        rows = []
        for name in self.list_commands(ctx):
            if name in SHORT_HELP:
                rows.append((name, SHORT_HELP[name]))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=formatter.width - 6 - max(map(len, COMMANDS)))))
        if rows:
            limit = formatter.width - 6 - max(len(n) for n, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(n, _shorten(h, limit)) for n, h in rows])

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


def _shorten(text: str, limit: int) -> str:
    """click's own one-line form of a help text: cut at a word, with "..." when longer than `limit`.

    Through a throwaway command's public `get_short_help_str` (click's `make_default_short_help` is deprecated)."""
    return click.Command(None, help=text).get_short_help_str(limit=max(limit, 20))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
