"""`vx serve` — a verifier behind HTTP (`vx.serve`; needs the `serve` extra: Starlette, uvicorn, prometheus_client)."""

from __future__ import annotations

import os
import sys

import click

from vx.cli.common import POSITIVE, POSITIVE_INT, UserError, err_console, family_option, friendly_errors

TOKEN_ENV = "VX_SERVE_TOKEN"


@click.command("serve")
@click.argument("expr_path", metavar="VERIFIER.vx", type=click.Path(exists=True, dir_okay=False))
@family_option("The family whose ops and tasks the verifier uses (default: the nearest family.toml above VERIFIER.vx).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (127.0.0.1: this machine only; any other address warns, see --token).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: a free port, printed at start).",
)
@click.option(
    "-j",
    "--jobs",
    "--max-concurrency",
    "jobs",
    type=POSITIVE_INT,
    default=2,
    show_default=True,
    help="Worker processes grading, shared by every request (each group's completions go to whichever is free).",
)
@click.option(
    "--warm/--no-warm",
    default=False,
    show_default=True,
    help="Prepare every task (the code family's probes) at start, before the first request, with progress.",
)
@click.option(
    "--deadline",
    type=POSITIVE,
    default=60.0,
    show_default=True,
    help="Seconds a request's groups may take; what is not graded by then abstains (reason 'deadline').",
)
@click.option(
    "--max-queue",
    type=POSITIVE_INT,
    default=2048,
    show_default=True,
    help="Completions admitted at once (queued or being graded); beyond, 429 with Retry-After.",
)
@click.option(
    "--max-connections",
    type=POSITIVE_INT,
    default=1024,
    show_default=True,
    help="Open connections at most; beyond, the server answers 503.",
)
@click.option(
    "--max-body",
    type=POSITIVE_INT,
    default=1_000_000,
    show_default=True,
    help="Largest request, in bytes (413 beyond).",
)
@click.option(
    "--max-solutions",
    type=POSITIVE_INT,
    default=100,
    show_default=True,
    help="Most solutions in one POST /grade request (one task's group).",
)
@click.option("--timeout", type=POSITIVE, default=10.0, show_default=True, help="Time limit per op call, in seconds.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Accept requests whose Host header names NAME (repeatable; default: the bound address only).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Accept requests a web page at ORIGIN sends, e.g. https://example.org (repeatable; default: none).",
)
@click.option(
    "--token",
    default=None,
    metavar="TOKEN",
    help=f"Require 'Authorization: Bearer TOKEN' on every request (default: ${TOKEN_ENV} when set).",
)
@click.option(
    "--header-timeout",
    type=POSITIVE,
    default=10.0,
    show_default=True,
    help="Seconds a connection may take to send its request's headers (then it is closed).",
)
@click.option(
    "--body-timeout",
    type=POSITIVE,
    default=30.0,
    show_default=True,
    help="Seconds a request may take to send its body (408 beyond).",
)
@click.option(
    "--gather",
    type=POSITIVE_INT,
    default=1,
    show_default=True,
    help="POST /openrlhf: gather this many completions of one task from separate requests into one group "
    "(OpenRLHF sends one per request; set it to --n_samples_per_prompt so peer ops compare them).",
)
@click.option(
    "--gather-wait",
    type=POSITIVE,
    default=2.0,
    show_default=True,
    help="Seconds a gathered group waits for its completions before it is graded as it is.",
)
@click.option(
    "--cache-mb",
    type=click.IntRange(0, 1 << 20),
    default=256,
    show_default=True,
    help="The verdict cache in memory, at most this many megabytes (0: no cache); least recently used goes first.",
)
@friendly_errors
def serve_cmd(
    expr_path,
    family_dir,
    host,
    port,
    jobs,
    warm,
    deadline,
    max_queue,
    max_connections,
    max_body,
    max_solutions,
    timeout,
    allow_hosts,
    allow_origins,
    token,
    header_timeout,
    body_timeout,
    gather,
    gather_wait,
    cache_mb,
) -> None:
    """Serve VERIFIER.vx over HTTP for RL trainers and agent loops.

    POST /grade takes {"task_id", "solution"} or {"task_id", "solutions": [...]} (a task's group, graded
    together so peer ops compare the attempts); POST /openrlhf is OpenRLHF's remote reward model
    (--remote_rm_url), POST /verl a verl compute_score call; GET /health, GET /metrics (Prometheus).
    JSON bodies only; the Host and Origin headers must name this server. Ctrl-C or SIGTERM: finishes
    the requests in flight, then exits.
    """
    try:
        from vx.serve import Guard, listening_socket, serve
    except ImportError as exc:  # MissingDependency names the extra
        raise UserError(str(exc)) from None
    from vx.reward.grader import GroupGrader
    from vx.serve import is_loopback
    from vx.verifier import Verifier

    token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
    if token is not None and (len(token) < 16 or not token.isprintable() or " " in token):
        raise UserError("--token must be at least 16 printable characters without spaces (a random secret)")
    verifier = Verifier.load(expr_path, family_dir)
    if not verifier.tasks:
        raise UserError(f"{expr_path}: its family has no tasks to grade against")
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    if not is_loopback(host):
        err_console.print(
            f"vx serve: warning: listening on {host}, reachable from other machines: whoever reaches it can make "
            "this machine run the code they post (in the sandbox)"
            + ("; every request needs the token" if token else "; pass --token (or $VX_SERVE_TOKEN) to require one"),
            markup=False,
        )
    grader = GroupGrader(
        verifier,
        workers=jobs,
        timeout=timeout,
        deadline=deadline,
        start=False,
        cache_entries=200_000 if cache_mb else 0,
        cache_bytes=max(1, cache_mb) * 1024 * 1024,
    )
    if warm:
        step = max(1, len(verifier.tasks) // 10)

        def progress(done: int, total: int) -> None:
            if done % step == 0 or done == total:
                err_console.print(f"vx serve: warm: {done}/{total} tasks prepared", markup=False)

        grader.warm(progress)
    grader.pool  # noqa: B018 - the workers start now, after warming, so they inherit what it prepared
    click.echo(
        f"vx serve: {expr_path} ({len(verifier.tasks)} tasks) on http://{host}:{bound} "
        "(GET /health /metrics, POST /grade /openrlhf /verl)",
        err=False,
    )
    sys.stdout.flush()
    serve(
        grader,
        sock,
        max_connections=max_connections,
        header_timeout=header_timeout,
        max_body=max_body,
        max_solutions=max_solutions,
        deadline=deadline,
        max_queue=max_queue,
        body_timeout=body_timeout,
        gather=gather,
        gather_wait=gather_wait,
        guard=Guard(host, bound, allow_hosts=allow_hosts, allow_origins=allow_origins, token=token),
    )
    err_console.print("vx serve: stopped")
