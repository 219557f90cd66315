"""`vx serve` under load: 50 concurrent clients for 60 s on loopback, against `vx grade` on the same samples.

    python benchmarks/bench_serve.py                       # 50 clients, 60 s, HumanEval samples of gpt-3.5
    python benchmarks/bench_serve.py --clients 10 --seconds 15

The samples are a shared HumanEval samples file (one attempt per task), read as `vx grade` reads it, at the
tasks of `examples/humaneval`. First `vx grade`'s own throughput on them
(:func:`vx.grading.grade_samples`, no verdict cache, ``--jobs`` workers); then `vx serve` on 127.0.0.1
(a free port, ``--max-concurrency`` = the same number of gradings at once, no verdict cache either) and
`--clients` asyncio clients (httpx), each posting one sample after another (round robin over the file)
for `--seconds`; requests still in flight at the deadline are awaited, not dropped. Reported: requests
sent, answered 200, errors (any other status or a transport error), lost (sent but never answered),
verdicts that differ from `vx grade`'s for the same sample, latency percentiles, throughput, and the
ratio of the two throughputs. Loopback only, every request bounded by a client timeout.

    python benchmarks/bench_serve.py --groups [--prompts 161] [--group 8] [--epochs 2] [--clients 4] [--jobs 2]
    python benchmarks/bench_serve.py --groups --memory 2000       # RSS of the server over 2,000 groups

``--groups`` is an RL trainer's workload: P prompts (the tasks of ``examples/humaneval`` that CodeT's
CodeGen-16B samples answer, ``../shared/data/samples/humaneval-codet``, read by bench_apply.py's loader), G
completions each, E epochs (the prompts recur; each epoch's G completions are the task's next G samples),
C clients each posting one prompt's group at a time (POST /grade) to ``vx serve -j JOBS --warm`` serving
every runnable op of the family's pool (the expression bench_apply.py grades). Reported, per epoch (the
first is cold for the verdict cache) and in all: completions/s, p50/p95/max group latency, verdict-cache
hits and identical completions shared, the tasks whose probes the serving generated (files the probe
store gained: 0 when warm); then, in the same run, the same samples through bench_apply.py's grading
(``apply_ops``, JOBS workers, the probe store the server filled) and ``vx grade`` per epoch (the groups as
the server got them): attempts/s, and the server's verdicts that differ from vx grade's (must be 0).
``--memory N`` posts N distinct groups and samples the server's resident memory (its process and its
workers) every 100 groups.

    python benchmarks/bench_serve.py --groups --family /tmp/tools --clients 4 --jobs 2   # a built tools family

``--family DIR`` draws the groups from that family's train split instead (the tools family: a question's
models' answers, the text ones -- a trainer's completions are text -- each with the end-of-turn tokens a
model left at its end removed, as a trainer's decode does), the expression every runnable op of its pool,
and bench_apply.py's side as ``bench_tools_apply.py`` applies a pool (``apply_ops``, no verdict cache).
``--shape`` says how a group is posted: vx's own ``/grade``, OpenRLHF's queries (``/openrlhf``: the
task's prompt rendered by a chat template, the response, an end-of-turn token; the task id as the label),
verl's batch (``/verl``: the task id as the ground truth), or ``trainers`` (the last two, group by group in
turn: the default with ``--family``). The rewards and verdicts read back from each shape's answer are
compared with ``vx grade``'s, per shape (0 differing).
"""

from __future__ import annotations

import argparse
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

from vx.grading import grade_samples, open_tasks
from vx.verifier import Verifier

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
HUMANEVAL = ROOT / "examples" / "humaneval"


def samples(path: Path, data_dir: Path, work: Path) -> tuple[Path, list[tuple[str, str]]]:
    """The file's attempts as vx grade reads them, restricted to the family's tasks, written as a plain
    {"task_id", "solution"} file for `vx grade --tasks examples/humaneval/tasks.jsonl`."""
    family_tasks = {json.loads(line)["id"] for line in (HUMANEVAL / "tasks.jsonl").read_text().splitlines()}
    attempts = open_tasks("humaneval+", data_dir=data_dir).read_samples([str(path)])
    pairs = [(a.task, a.output) for a in attempts if a.task in family_tasks]
    out = work / "serve-samples.jsonl"
    out.write_text("".join(json.dumps({"task_id": t, "solution": o}) + "\n" for t, o in pairs), encoding="utf-8")
    return out, pairs


async def load(url: str, pairs: list[tuple[str, str]], clients: int, seconds: float) -> dict[str, Any]:
    deadline = time.perf_counter() + seconds
    counter = {"next": 0}
    results: list[tuple[int, int, str | None, float]] = []  # (pair index, status, verdict, latency)
    sent = [0]

    async def client(http: httpx.AsyncClient) -> None:
        while time.perf_counter() < deadline:
            i = counter["next"] % len(pairs)
            counter["next"] += 1
            task, output = pairs[i]
            sent[0] += 1
            t0 = time.perf_counter()
            try:
                r = await http.post("/grade", json={"task_id": task, "solution": output})
                verdict = r.json().get("verdict") if r.status_code == 200 else None
                results.append((i, r.status_code, verdict, time.perf_counter() - t0))
            except httpx.HTTPError as exc:
                results.append((i, -1, type(exc).__name__, time.perf_counter() - t0))

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    return {"results": results, "sent": sent[0], "elapsed": elapsed}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=Path, default=SHARED / "samples" / "humaneval" / "gpt-3.5-turbo-0613.jsonl")
    p.add_argument("--data-dir", type=Path, default=SHARED / "evalplus")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--jobs", type=int, default=2, help="vx grade's workers = the server's --max-concurrency")
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    p.add_argument("--groups", action="store_true", help="the RL trainer's workload (see the module docstring)")
    p.add_argument("--prompts", type=int, default=0, help="--groups: prompts (0: every task CodeT answers)")
    p.add_argument("--group", type=int, default=8, help="--groups: completions per prompt (G)")
    p.add_argument("--epochs", type=int, default=2, help="--groups: epochs (E)")
    p.add_argument("--memory", type=int, default=0, help="--groups: post this many groups and sample the RSS")
    p.add_argument("--cache-mb", type=int, default=256, help="--groups: the server's verdict cache bound (MB)")
    p.add_argument(
        "--family",
        type=Path,
        default=None,
        help="--groups: draw the groups from this family's train answers (e.g. a tools family) instead of CodeT's",
    )
    p.add_argument(
        "--shape",
        choices=("grade", "openrlhf", "verl", "trainers"),
        default=None,
        help="--groups: the request shape (trainers: OpenRLHF's and verl's in turn; default: grade for CodeT, "
        "trainers with --family)",
    )
    args = p.parse_args(argv)
    if args.groups:
        from bench_serve_groups import run_groups

        return run_groups(args)
    if not args.samples.is_file():
        print(f"{args.samples}: no samples: nothing to benchmark (skipped)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="vx-bench-serve-"))
    plain, pairs = samples(args.samples, args.data_dir, work)
    verifier = Verifier.load(HUMANEVAL / "seed.vx")

    t0 = time.perf_counter()
    graded = grade_samples(
        verifier, open_tasks(str(HUMANEVAL / "tasks.jsonl")), [plain], jobs=args.jobs, cache=None, anchor=False
    )
    grade_s = time.perf_counter() - t0
    expected = [f.value for f in graded.evaluation.grading.finals]
    grade_rate = len(pairs) / grade_s
    print(
        f"vx grade: {len(pairs)} samples in {grade_s:.1f} s = {grade_rate:.2f} samples/s (jobs {args.jobs})",
        file=sys.stderr,
        flush=True,
    )

    cmd = [
        sys.executable,
        "-c",
        "import sys; from vx.cli.main import main; sys.exit(main())",
        "serve",
        str(HUMANEVAL / "seed.vx"),
        "--port",
        "0",
        "--max-concurrency",
        str(args.jobs),
    ]
    server = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        line = server.stdout.readline()
        if " on http://" not in line:
            raise SystemExit(f"vx serve did not start: {line}{server.stderr.read()}")
        url = line.split(" on ", 1)[1].split()[0]
        run = asyncio.run(load(url, pairs, args.clients, args.seconds))
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=300)
    results = run["results"]
    ok = [r for r in results if r[1] == 200]
    latencies = sorted(r[3] for r in ok)
    serve_rate = len(ok) / run["elapsed"]
    figures = {
        "clients": args.clients,
        "seconds": args.seconds,
        "samples": len(pairs),
        "jobs": args.jobs,
        "sent": run["sent"],
        "answered_200": len(ok),
        "errors": len(results) - len(ok),
        "error_kinds": sorted({f"{r[1]} {r[2]}" for r in results if r[1] != 200}),
        "lost": run["sent"] - len(results),
        "verdicts_differing_from_vx_grade": sum(r[2] != expected[r[0]] for r in ok),
        "latency_s": {
            "p50": statistics.median(latencies) if latencies else None,
            "p95": latencies[int(0.95 * (len(latencies) - 1))] if latencies else None,
            "max": latencies[-1] if latencies else None,
        },
        "elapsed_s": run["elapsed"],
        "serve_per_s": serve_rate,
        "grade_per_s": grade_rate,
        "ratio_serve_to_grade": serve_rate / grade_rate,
        "server_exit_code": server.returncode,
        "server_stopped_cleanly": server.returncode == 0 and "vx serve: stopped" in err,
    }
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if figures["errors"] == figures["lost"] == figures["verdicts_differing_from_vx_grade"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
