"""`bench_serve.py --groups`: an RL trainer's reward workload against `vx serve` (see bench_serve.py's docstring)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
HUMANEVAL = ROOT / "examples" / "humaneval"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def _rss_kb(pid: int, children: bool = True) -> int:
    """Memory of a process and (``children``) its descendants (the server and its workers), in kB: each one's
    proportional set size (Pss: a page shared by n processes counts 1/n in each, so a fresh fork's pages are
    not counted twice), else its resident set size where the kernel does not say."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            try:
                rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
                total += int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:")))
            except (OSError, StopIteration):
                status = Path(f"/proc/{p}/status").read_text()
                total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
            if children:
                for t in Path(f"/proc/{p}/task").iterdir():
                    todo += [int(k) for k in (t / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def _start(
    expr: Path, family: Path, jobs: int, env: dict[str, str], cache_mb: int
) -> tuple[subprocess.Popen, str, float]:
    cmd = [sys.executable, "-c", "import sys; from vx.cli.main import main; sys.exit(main())", "serve", str(expr)]
    cmd += ["--family", str(family), "--port", "0", "-j", str(jobs), "--warm", "--max-solutions", "1000"]
    cmd += ["--cache-mb", str(cache_mb)]
    t0 = time.perf_counter()
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = server.stdout.readline()
    if " on http://" not in line:
        raise SystemExit(f"vx serve did not start: {line}{server.stderr.read()}")
    return server, line.split(" on ", 1)[1].split()[0], time.perf_counter() - t0


#: The request shapes a group can be posted in (``trainers``: OpenRLHF's and verl's, group by group in turn).
SHAPES = ("grade", "openrlhf", "verl", "trainers")
_VERDICTS = ("pass", "fail", "abstain")


def _shape_of(shape: str, i: int) -> str:
    return ("openrlhf", "verl")[i % 2] if shape == "trainers" else shape


def chat_prompt(task: dict[str, Any]) -> str:
    """A task's prompt as a chat template renders it (what OpenRLHF sends before a response): its ``prompt``
    text, else its ``question`` (text, or messages per turn)."""
    if isinstance(task.get("prompt"), str):
        turns = [[{"role": "user", "content": task["prompt"]}]]
    elif isinstance(task.get("question"), list):
        turns = [t if isinstance(t, list) else [t] for t in task["question"]]
    else:
        turns = [[{"role": "user", "content": str(task.get("question", ""))}]]
    text = "".join(f"<|im_start|>{m.get('role')}\n{m.get('content')}<|im_end|>\n" for t in turns for m in t)
    return text + "<|im_start|>assistant\n"


def request(shape: str, task: str, outputs: list[str], prompt: str) -> tuple[str, dict[str, Any]]:
    """The path and body of one group in `shape`: vx's own, OpenRLHF's queries (prompt + response + the
    end-of-turn token its decode keeps; the label is the task id) or verl's batch (ground truth: the task
    id; data source and index beside it, as verl's datasets carry them)."""
    n = len(outputs)
    if shape == "openrlhf":
        return "/openrlhf", {
            "query": [prompt + o + "<|im_end|>" for o in outputs],
            "prompts": [prompt] * n,
            "labels": [task] * n,
        }
    if shape == "verl":
        return "/verl", {
            "data_sources": ["bench"] * n,
            "solution_strs": outputs,
            "ground_truths": [task] * n,
            "extra_infos": [{"index": k} for k in range(n)],
        }
    return "/grade", {"task_id": task, "solutions": outputs}


def answer(shape: str, doc: dict[str, Any]) -> list[tuple[str, float | None]]:
    """(verdict, reward) per completion, read back from `shape`'s answer as the trainer reads it (no reward
    in vx's own: None)."""
    if shape == "openrlhf":
        logs = doc["extra_logs"]
        return [(next(v for v in _VERDICTS if logs[f"vx_{v}"][k]), float(r)) for k, r in enumerate(doc["rewards"])]
    if shape == "verl":
        return [(next(v for v in _VERDICTS if s[f"vx_{v}"]), float(s["score"])) for s in doc["scores"]]
    return [(x["verdict"], None) for x in doc["results"]]


async def _post_groups(
    url: str,
    groups: list[tuple[str, list[str]]],
    clients: int,
    on_group: Any = None,
    shape: str = "grade",
    prompts: dict[str, str] | None = None,
) -> dict:
    """Each client posts the next group (in `shape`) as soon as its last one is answered; latencies per group."""
    todo = list(enumerate(groups))[::-1]
    answers: dict[int, Any] = {}
    rewards: dict[int, Any] = {}
    shapes: dict[int, str] = {}
    latency: dict[int, float] = {}
    errors: list[str] = []

    async def client(http: httpx.AsyncClient) -> None:
        while todo:
            i, (task, outputs) = todo.pop()
            kind = _shape_of(shape, i)
            path, body = request(kind, task, outputs, (prompts or {}).get(task, ""))
            t0 = time.perf_counter()
            try:
                r = await http.post(path, json=body)
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}")
                continue
            latency[i] = time.perf_counter() - t0
            if r.status_code != 200:
                errors.append(f"{r.status_code} {r.text[:100]}")
                continue
            read = answer(kind, r.json())
            answers[i] = [v for v, _ in read]
            rewards[i] = [x for _, x in read]
            shapes[i] = kind
            if on_group is not None:
                on_group(len(answers))

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    return {
        "answers": answers,
        "rewards": rewards,
        "shapes": shapes,
        "latency": latency,
        "errors": errors,
        "elapsed": elapsed,
    }


def _metric(text: str, name: str) -> float:
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(name + " ") or line.startswith(name + "{")
    )


def codet_groups(per_task: int) -> tuple[Path, dict[str, list[str]]] | None:
    """CodeT's CodeGen-16B samples at the tasks of examples/humaneval: (family, task -> programs in order)."""
    import bench_apply

    from vx.families.family import Family

    if not bench_apply.CODET.is_dir():
        print(f"{bench_apply.CODET}: no CodeT samples: nothing to benchmark (skipped)")
        return None
    tasks = Family(HUMANEVAL).tasks
    by_task: dict[str, list[str]] = {}
    for _, task, program in bench_apply.load_codet(per_task):
        if task in tasks:
            by_task.setdefault(task, []).append(program)
    return HUMANEVAL, by_task


def family_groups(family_dir: Path) -> dict[str, list[str]]:
    """A family's train answers that are text (a trainer's completions are text: the tools family's
    function-calling-API answers, lists of calls, are left out), task -> answers in file order, each as a
    trainer's decode hands it over (the end-of-turn tokens a model left at its end removed)."""
    from vx.families.family import Family
    from vx.reward.shapes import strip_end_tokens

    by_task: dict[str, list[str]] = {}
    for it in Family(family_dir).split("train").items:
        if isinstance(it.output, str):
            by_task.setdefault(it.task, []).append(strip_end_tokens(it.output))
    return by_task


def run_groups(args: Any) -> int:
    from vx.families.family import Family
    from vx.grading import grade_samples, open_tasks
    from vx.ops.apply import apply_ops
    from vx.ops.item import Item
    from vx.reward.grader import DEFAULT_REWARDS
    from vx.verifier import Verifier

    g, e = args.group, args.epochs
    per_task = g * e if not args.memory else 100
    if args.family is None:
        found = codet_groups(per_task)
        if found is None:
            return 0
        family_dir, by_task = found
        shape = args.shape or "grade"
    else:
        family_dir, by_task = args.family, family_groups(args.family)
        shape = args.shape or "trainers"
    work = Path(tempfile.mkdtemp(prefix="vx-bench-groups-"))
    fam = Family(family_dir)
    pool = fam.pool()
    ops = [o.name for o in pool.runnable() if o.name != pool.root_name]
    expr = work / "all.vx"
    expr.write_text("(any " + " ".join(ops) + ")\n", encoding="utf-8")  # bench_apply.py's expression: every op
    tasks = [t for t in by_task if len(by_task[t]) >= (per_task if not args.memory else g)]
    if args.prompts:
        tasks = tasks[: args.prompts]
    prompts = {t: chat_prompt(dict(fam.tasks[t])) for t in tasks}
    probes = work / "probes"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "VX_PROBE_CACHE": str(probes)}
    server, url, started = _start(expr, family_dir, args.jobs, env, args.cache_mb)
    figures: dict[str, Any] = {
        "load_average_at_start": os.getloadavg(),
        "family": str(family_dir),
        "samples": "CodeT's CodeGen-16B HumanEval samples" if args.family is None else "the family's train answers",
        "shape": shape,
        "prompts": len(tasks),
        "group": g,
        "epochs": e,
        "clients": args.clients,
        "jobs": args.jobs,
        "ops": len(ops) + 1,
        "server_start_with_warm_s": round(started, 1),
    }
    try:
        if args.memory:
            rounds = max(len(by_task[t]) for t in tasks) // g
            groups = [
                (t, by_task[t][k * g : (k + 1) * g])
                for k in range(rounds)
                for t in tasks
                if len(by_task[t]) >= (k + 1) * g
            ][: args.memory]
            samples: list[tuple[int, int]] = []
            parent: list[float] = []
            cache_mb: list[float] = []

            def sample(n: int) -> None:
                if n % 100 == 0:
                    samples.append((n, _rss_kb(server.pid)))
                    parent.append(round(_rss_kb(server.pid, children=False) / 1024, 1))
                    cache_mb.append(round(_metric(httpx.get(f"{url}/metrics").text, "vx_cache_bytes") / 2**20, 1))

            run = asyncio.run(_post_groups(url, groups, args.clients, sample, shape, prompts))
            base = samples[1][1] if len(samples) > 1 else samples[0][1]
            figures["memory"] = {
                "groups": len(run["answers"]),
                "errors": len(run["errors"]),
                "pss_mb_every_100_groups": [round(kb / 1024, 1) for _, kb in samples],
                "pss_change_from_group_200": round(samples[-1][1] / base - 1, 3),
                "server_process_pss_mb_every_100_groups": parent,
                "server_process_change_from_group_200": round(parent[-1] / parent[1] - 1, 3)
                if len(parent) > 1
                else None,
                "cache_mb_every_100_groups": cache_mb,
                "cache_bound_mb": args.cache_mb,
                "completions_per_s": round(sum(len(a) for a in run["answers"].values()) / run["elapsed"], 2),
            }
        else:
            store_before = len(list(probes.glob("**/*.json"))) if probes.is_dir() else 0
            posted = [[(t, by_task[t][k * g : (k + 1) * g]) for t in tasks] for k in range(e)]

            def through_bench_apply() -> float:
                """attempts/s of bench_apply.py's grading of the same groups, one epoch a batch (a task's G
                attempts are each other's peers, as in the server), the probe store the server filled:
                CodeT's through bench_apply.grade, a family's through apply_ops as bench_tools_apply.py
                applies its pool (no verdict cache)."""
                import bench_apply

                n = seconds = 0.0
                for k, gs in enumerate(posted):
                    items = [Item(id=f"{t}#e{k}s{j}", task=t, output=o) for t, os_ in gs for j, o in enumerate(os_)]
                    if args.family is None:
                        took, _ = bench_apply.grade(fam, items, args.jobs, probes_dir=probes)
                    else:
                        t0 = time.perf_counter()
                        apply_ops(pool, items, fam.tasks, jobs=args.jobs, cache=None, progress=False, peers={})
                        took = time.perf_counter() - t0
                    n, seconds = n + len(items), seconds + took
                return n / seconds

            before = through_bench_apply()
            epochs = []
            for k in range(e):
                groups = posted[k]
                m0 = httpx.get(f"{url}/metrics").text
                run = asyncio.run(_post_groups(url, groups, args.clients, None, shape, prompts))
                m1 = httpx.get(f"{url}/metrics").text
                lat = list(run["latency"].values())
                n = sum(len(a) for a in run["answers"].values())
                epochs.append(
                    {
                        "epoch": k + 1,
                        "completions": n,
                        "completions_by_shape": {
                            s: sum(len(run["answers"][i]) for i in run["answers"] if run["shapes"][i] == s)
                            for s in sorted(set(run["shapes"].values()))
                        },
                        "errors": run["errors"][:5],
                        "elapsed_s": round(run["elapsed"], 1),
                        "completions_per_s": round(n / run["elapsed"], 2),
                        "group_latency_s": {
                            "p50": round(statistics.median(lat), 2),
                            "p95": round(_pct(lat, 0.95) or 0, 2),
                            "max": round(max(lat), 2),
                        },
                        "cache_hits": _metric(m1, "vx_cache_hits_total") - _metric(m0, "vx_cache_hits_total"),
                        "shared_identical": _metric(m1, "vx_shared_verdicts_total")
                        - _metric(m0, "vx_shared_verdicts_total"),
                        "op_calls": _metric(m1, "vx_op_calls_total") - _metric(m0, "vx_op_calls_total"),
                        "run": run,
                    }
                )
            store_after = len(list(probes.glob("**/*.json"))) if probes.is_dir() else 0
            figures["probe_store"] = {
                "tasks_prepared_at_start": store_before,
                "tasks_generated_while_serving": store_after - store_before,
            }
            total_n = sum(x["completions"] for x in epochs)
            total_s = sum(x["elapsed_s"] for x in epochs)
            figures["serve_completions_per_s"] = round(total_n / total_s, 2)
            warm = epochs[1:] or epochs
            figures["warm_completions_per_s"] = round(
                sum(x["completions"] for x in warm) / sum(x["elapsed_s"] for x in warm), 2
            )
            after = through_bench_apply()
            figures["bench_apply_attempts_per_s"] = {
                "before_serving": round(before, 2),
                "after_serving": round(after, 2),
            }
            figures["ratio_warm_serve_to_bench_apply"] = round(
                figures["warm_completions_per_s"] / ((before + after) / 2), 3
            )
            figures["load_average_at_end"] = os.getloadavg()
            v = Verifier.load(expr, fam)
            differing: dict[str, int] = {}
            rewards_differing: dict[str, int] = {}
            verdicts: dict[str, int] = dict.fromkeys(_VERDICTS, 0)
            t0 = time.perf_counter()
            for k, gs in enumerate(posted):
                path = work / f"epoch{k}.jsonl"
                path.write_text("".join(json.dumps({"task_id": t, "solution": o}) + "\n" for t, os_ in gs for o in os_))
                graded = grade_samples(
                    v, open_tasks(str(family_dir / "tasks.jsonl")), [path], jobs=args.jobs, cache=None, anchor=False
                )
                expected = [f.value for f in graded.evaluation.grading.finals]
                run = epochs[k]["run"]
                at = 0
                for i, (_, os_) in enumerate(gs):
                    want = expected[at : at + len(os_)]
                    at += len(os_)
                    for verdict in want:
                        verdicts[verdict] += 1
                    kind = run["shapes"].get(i, _shape_of(shape, i))
                    got = run["answers"].get(i, [])
                    differing[kind] = differing.get(kind, 0) + sum(a != b for a, b in zip(got, want))
                    differing[kind] += abs(len(got) - len(want))
                    paid = run["rewards"].get(i, [])
                    if kind != "grade":
                        rewards_differing[kind] = rewards_differing.get(kind, 0) + abs(len(paid) - len(want))
                        rewards_differing[kind] += sum(r != DEFAULT_REWARDS[w] for r, w in zip(paid, want))
            figures["vx_grade_attempts_per_s"] = round(total_n / (time.perf_counter() - t0), 2)
            figures["vx_grade_verdicts"] = verdicts
            figures["verdicts_differing_from_vx_grade_by_shape"] = differing
            figures["rewards_differing_from_vx_grade_by_shape"] = rewards_differing
            figures["verdicts_differing_from_vx_grade"] = sum(differing.values())
            for x in epochs:
                x.pop("run")
            figures["epochs"] = epochs
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=300)
    figures["server_stopped_cleanly"] = server.returncode == 0 and "vx serve: stopped" in err
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    bad = (
        figures.get("verdicts_differing_from_vx_grade", 0)
        or sum(figures.get("rewards_differing_from_vx_grade_by_shape", {}).values())
        or figures.get("memory", {}).get("errors", 0)
    )
    return 1 if bad else 0
