"""`vx explain` — every node's verdict on one item, with each op's message (a failure capsule)."""

from __future__ import annotations

import json

import click
from rich.tree import Tree

from vx.cli.common import (
    cache_options,
    console,
    dump_document,
    esc,
    family_option,
    friendly_errors,
    open_cache,
    run_options,
)
from vx.cli.eval import load_verifier

_STYLE = {"drawback": "bold red", "clean": "green", "abstain": "dim"}


def _label(t) -> str:
    v = str(t.verdict)
    s = f"{esc(t.text)}  [{_STYLE[v]}]{v.upper()}[/]"
    if t.message:
        s += f"  — {esc(t.message)}"
    if t.error:
        s += f"  [yellow](error: {esc(t.error)})[/]"
    return s


def _add(tree: Tree, t) -> None:
    node = tree.add(_label(t))
    for c in t.children:
        _add(node, c)


def _sample(lines: list[str], per_kind: int = 3, total: int = 15) -> list[str]:
    """A few lines of each kind (the text before ": "), in order, for the console (--json has all)."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for line in lines:
        kind = line.split(": ", 1)[0] if ": " in line else ""
        if seen.get(kind, 0) < per_kind and len(out) < total:
            seen[kind] = seen.get(kind, 0) + 1
            out.append(line)
    return out


def find_item(fam, item_id: str):
    for name in ("dev", "train", "locked"):
        split = fam.labeled(name)
        for it in split.items:
            if it.id == item_id:
                return name, it
    import difflib

    ids = [i for name in ("dev", "train", "locked") for i in fam.labeled(name).ids]
    of_task = [
        (name, it.id) for name in ("dev", "train", "locked") for it in fam.labeled(name).items if it.task == item_id
    ]
    if of_task:  # a task id: name the items of that task (item ids are <task>#<k>)
        shown = ", ".join(i for _, i in of_task[:6]) + (f" … ({len(of_task)} in all)" if len(of_task) > 6 else "")
        raise KeyError(f"{item_id!r} is a task, not an item; its items in family {fam.name} ({of_task[0][0]}): {shown}")
    near = difflib.get_close_matches(item_id, ids, n=3)
    hint = f" — did you mean {', '.join(near)}?" if near else ""
    raise KeyError(f"no item {item_id!r} in family {fam.name}{hint}")


def print_output(output, language: str | None) -> None:
    """The graded output: highlighted on a terminal (in the family's language), plain in a pipe."""
    from vx.text import printable

    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, indent=2)
    text = printable(text)
    console.print("[bold]output[/]:")
    if console.is_terminal and language:
        from rich.syntax import Syntax

        console.print(
            Syntax(text, language, theme="ansi_dark", background_color="default", line_numbers=True, word_wrap=True)
        )
    else:
        console.print(text, markup=False, highlight=False)


def doubtful_drawbacks(expr_path: str, ops: list[str]) -> list[tuple[str, tuple[float, float]]]:
    """The drawbacks whose op the .vx file's ``; false_alarms:`` header (written by `vx evolve`) estimates to
    fire on at least `HIGH_FALSE_ALARM` of correct outputs."""
    from vx.dsl.vxfile import read_header, read_text
    from vx.evolve.estimates import HIGH_FALSE_ALARM, parse_header_estimates

    try:
        est = parse_header_estimates(read_header(read_text(expr_path)).get("false_alarms", ""))
    except (OSError, ValueError):
        return []
    return [(o, est[o]) for o in dict.fromkeys(ops) if o in est and est[o][0] >= HIGH_FALSE_ALARM]


@click.command("explain")
@click.argument("expr_path", metavar="EXPR.vx", type=click.Path(exists=True, dir_okay=False))
@click.option("--item", "item_id", required=True, help="Item id (searched in dev, train, then locked).")
@family_option("Family directory (default: the nearest family.toml above EXPR.vx).")
@click.option("--json", "as_json", is_flag=True, help="Print the failure capsule as JSON (schema vx-explain/1).")
@click.option(
    "--rank/--no-rank",
    default=True,
    help="Also grade the other attempts at the item's task and say where the item ranks among them, and why "
    "(best of n; default: on when the task has other attempts).",
)
@run_options
@cache_options
@friendly_errors
def explain_cmd(expr_path, item_id, family_dir, as_json, rank, jobs, timeout, cache_path, no_cache):
    """Explain the verdict of EXPR.vx on one item: the tree with each node's verdict."""
    from vx.ops.item import Item

    verifier, fam = load_verifier(expr_path, family_dir)
    split_name, item = find_item(fam, item_id)
    others = fam.attempts_for([item]).get(item.task, [])
    n_peers = len(others)
    cache = open_cache(cache_path, no_cache)
    placement = None
    try:
        if rank and others:  # the item and every other attempt at its task, graded and ranked together
            group = [item] + [Item(f"{item.task}~{k}", item.task, o) for k, o in enumerate(others)]
            grading = verifier.grade_items(
                group, jobs=jobs, timeout=timeout, cache=cache, progress=False, peers={}, rank=True
            )
            placement = verifier.placements(grading, group)[0]
        else:
            grading = verifier.grade_items([item], jobs=1, timeout=timeout, cache=cache, progress=False)
    finally:
        if cache is not None:
            cache.close()
    g = verifier.explain(item, grading)
    pack = fam.pack()
    about = pack.describe_task(fam.tasks[item.task]) if pack.describe_task is not None else {}
    doubtful = doubtful_drawbacks(expr_path, [o for o, _m in g.drawbacks])
    if as_json:
        dump_document(
            "vx-explain/1",
            {
                "item": item.id,
                "task": item.task,
                "split": split_name,
                "label": item.hard_label(),
                "expression": verifier.text,
                "other_attempts": n_peers,
                "task_inputs": about,
                **g.as_dict(),
                "doubtful_drawbacks": [{"op": o, "false_alarm_rate": r, "n": n} for o, (r, n) in doubtful],
                "ranking": placement.as_dict() if placement is not None else None,
                "output": item.output,
            },
        )
        return
    v = g.verdict.value
    color = {"fail": "bold red", "pass": "bold green", "abstain": "dim"}[v]
    lab = f" (label: {item.hard_label()})" if item.hard_label() else ""
    console.print(
        f"item [cyan]{esc(item.id)}[/] of task {esc(item.task)} in {split_name}{lab}: verdict [{color}]{v.upper()}[/]"
    )
    from rich.syntax import Syntax

    from vx.dsl.lexer import VxLexer

    console.print(Syntax(verifier.text, VxLexer(), theme="ansi_dark", background_color="default", word_wrap=True))
    print_output(item.output, pack.output_language)
    if g.root is not None:
        console.print("root " + _label(g.root))
    tree = Tree(_label(g.trace))
    for c in g.trace.children:
        _add(tree, c)
    console.print(tree)
    if g.drawbacks:
        console.print(
            "drawbacks: " + "; ".join(f"[red]{esc(o)}[/]" + (f": {esc(m)}" if m else "") for o, m in g.drawbacks)
        )
    for o, (rate, n) in doubtful:
        console.print(
            f"[yellow]note[/]: {esc(o)} fires on an estimated {rate:.1%} of correct outputs ({n:.0f} "
            "pseudo-positives of the train split, from the .vx header): this drawback may be a false alarm"
        )
    if n_peers:
        console.print(f"peers: {n_peers} other attempt(s) at {esc(item.task)} in the family")
    if placement is not None:
        console.print(f"[bold]best of n[/]: {esc(placement.reason)}")
    for title, lines in about.items():
        if isinstance(lines, str):
            console.print(f"{title}: {esc(lines)}")
            continue
        if not lines:
            continue
        shown = _sample(lines)
        more = f" … and {len(lines) - len(shown)} more (--json lists all)" if len(lines) > len(shown) else ""
        console.print(f"{esc(title)} ({len(lines)}):")
        for line in shown:
            console.print(f"  {esc(line)}")
        if more:
            console.print(f" {more}")
