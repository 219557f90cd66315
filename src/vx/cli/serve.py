"""`vx serve` — a verifier behind HTTP (`vx.serve`; needs the `serve` extra: Starlette and uvicorn)."""

from __future__ import annotations

import sys

import click

from vx.cli.common import POSITIVE, POSITIVE_INT, UserError, err_console, friendly_errors


@click.command("serve")
@click.argument("expr_path", metavar="VERIFIER.vx", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--family",
    "family_dir",
    type=click.Path(exists=True, file_okay=False),
    help="The family whose ops and tasks the verifier uses (default: the nearest family.toml above VERIFIER.vx).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (127.0.0.1: this machine only; the server has no authentication).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: a free port, printed at start).",
)
@click.option(
    "--max-concurrency",
    type=POSITIVE_INT,
    default=2,
    show_default=True,
    help="Requests graded at once; the others wait their turn.",
)
@click.option(
    "--max-connections",
    type=POSITIVE_INT,
    default=256,
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
    help="Most solutions in one request (one task's group).",
)
@click.option("--timeout", type=POSITIVE, default=10.0, show_default=True, help="Time limit per op call, in seconds.")
@friendly_errors
def serve_cmd(
    expr_path, family_dir, host, port, max_concurrency, max_connections, max_body, max_solutions, timeout
) -> None:
    """Serve VERIFIER.vx over HTTP: GET /health, POST /grade.

    POST /grade takes {"task_id", "solution"} or {"task_id", "solutions": [...]} (a task's group,
    graded together so peer ops compare the attempts) and answers the verdict, the failed checks
    and every op's verdict and message as JSON. Ctrl-C or SIGTERM: finishes the requests in
    flight, then exits.
    """
    try:
        from vx.serve import listening_socket, serve
    except ImportError as exc:  # MissingDependency names the extra
        raise UserError(str(exc)) from None
    from vx.verifier import Verifier

    verifier = Verifier.load(expr_path, family_dir)
    if not verifier.tasks:
        raise UserError(f"{expr_path}: its family has no tasks to grade against")
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    click.echo(
        f"vx serve: {expr_path} ({len(verifier.tasks)} tasks) on http://{host}:{bound} (GET /health, POST /grade)",
        err=False,
    )
    sys.stdout.flush()
    serve(
        verifier,
        sock,
        max_connections=max_connections,
        max_body=max_body,
        max_solutions=max_solutions,
        max_concurrency=max_concurrency,
        timeout=timeout,
    )
    err_console.print("vx serve: stopped")
