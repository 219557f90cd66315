"""What a long-lived grader keeps: the resident memory of `vx serve` (the server and its worker processes)
over many requests of a hostile output that returns a large value from every call.

    python benchmarks/bench_memory.py --requests 500 --concurrency 2 [--expr examples/humaneval/seed.vx]

Starts ``vx serve`` on a free loopback port, waits for ``GET /health``, then posts ``--requests`` gradings of
the memory bomb (``return list(range(200000 + i))``: a different text each time, so no verdict is served from
a cache) to ``POST /grade``, ``--concurrency`` at a time, and samples the resident set size of the server and
every process it started that is still alive (``/proc/PID/status`` ``VmRSS``; the sandboxed children come and
go) after every ``--every`` requests, when none is in flight (what the server keeps, not what a request in
progress holds). Prints one line per sample and a JSON summary: the first sample after
``--warm`` requests, the last, the largest, and the last as a ratio of the first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def _rss_mb(pid: int) -> float:
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _post(url: str, body: dict) -> int:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=600) as resp:
        resp.read()
        return int(resp.status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--expr", default=str(ROOT / "examples" / "humaneval" / "seed.vx"))
    ap.add_argument("--task", default="HumanEval/0")
    ap.add_argument("--entry", default="has_close_elements")
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--jobs-flag", default="-j", help="how the server's vx names it (an older one: --max-concurrency)")
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--warm", type=int, default=25, help="requests before the first sample that counts")
    ap.add_argument("--size", type=int, default=200_000, help="numbers in the list every call returns")
    ap.add_argument("--log", default=None, help="where the server's messages go (default: nowhere)")
    args = ap.parse_args()

    port = _free_port()
    env = {**os.environ, "VX_PROBE_CACHE": os.environ.get("VX_PROBE_CACHE", "off")}
    code = "import sys; from vx.cli.main import main; sys.exit(main())"
    server = subprocess.Popen(
        [sys.executable, "-c", code, "serve", args.expr, "--port", str(port), args.jobs_flag, str(args.jobs)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(os.devnull if args.log is None else args.log, "w"),  # noqa: SIM115 (closed with the process)
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(1)
        else:
            raise SystemExit("vx serve did not answer /health in 10 minutes")
        start = _rss_mb(server.pid)
        print(f"started: {start:.0f} MB", flush=True)
        samples: list[tuple[int, float]] = []
        t0 = time.monotonic()

        def bomb(i: int) -> int:
            solution = f"def {args.entry}(*args):\n    return list(range({args.size} + {i}))\n"
            return _post(url + "/grade", {"task_id": args.task, "solution": solution})

        statuses: dict[int, int] = {}
        done = 0
        with ThreadPoolExecutor(args.concurrency) as pool:
            while done < args.requests:  # a batch at a time, sampled when none is in flight: what is kept
                batch = range(done, min(args.requests, done + args.every))
                for status in pool.map(bomb, batch):
                    statuses[status] = statuses.get(status, 0) + 1
                done = batch.stop
                time.sleep(1.0)  # the last sandboxed children reaped
                rss = _rss_mb(server.pid)
                samples.append((done, rss))
                print(f"{done:5d} requests  {rss:7.0f} MB  {time.monotonic() - t0:7.0f} s", flush=True)
        counted = [rss for n, rss in samples if n >= args.warm]
        first, last = counted[0], counted[-1]
        print(
            json.dumps(
                {
                    "requests": args.requests,
                    "statuses": statuses,
                    "started_mb": round(start),
                    "first_counted_mb": round(first),
                    "last_mb": round(last),
                    "max_mb": round(max(counted)),
                    "last_over_first": round(last / first, 3),
                    "max_over_first": round(max(counted) / first, 3),
                    "seconds": round(time.monotonic() - t0),
                }
            )
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
