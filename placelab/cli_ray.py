"""``placelab ray stop``: stop what local Ray runtimes of killed placelab drivers left running.

A ``placelab`` command killed hard (``kill -9``) while it ran a local Ray runtime (``--workers N``)
leaves two of Ray's processes behind (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``), which
ignore SIGTERM. The next ``--workers`` command stops them before it starts Ray; this command does
it on demand (see :func:`engine.parallel.ray_runtimes.stop_orphaned_runtimes`). Runtimes of commands still
running, and Ray clusters started with ``ray start``, are left alone.
"""

from __future__ import annotations

import typer

from placelab.cli_common import JsonOpt, emit

__all__ = ["register"]

ray_app = typer.Typer(no_args_is_help=True, help="Local Ray runtimes started by placelab (--workers).")


@ray_app.command("stop")
def stop(as_json: JsonOpt = False) -> None:
    """Stop the Ray processes left running by placelab commands that were killed (kill -9)."""
    from engine.parallel.ray_runtimes import local_runtime_dir, stop_orphaned_runtimes

    out = stop_orphaned_runtimes()
    stopped = out["stopped"]
    if stopped:
        names = ", ".join(sorted({s["name"] for s in stopped}))
        killed = sum(1 for s in stopped if s["signal"] == "SIGKILL")
        text = (f"stopped {len(stopped)} Ray process(es) ({names}; {killed} needed SIGKILL) left by "
                f"{len(out['drivers'])} killed placelab command(s)")
    elif out["drivers"]:
        text = f"nothing left running by {len(out['drivers'])} killed placelab command(s); their records removed"
    else:
        text = "no Ray processes left behind by placelab"
    if out["running"]:
        text += f"; {out['running']} local runtime(s) of running placelab commands left alone"
    for problem in out["problems"]:
        typer.echo(f"warning: {problem}", err=True)
    emit({**out, "state_dir": str(local_runtime_dir())}, as_json, text)


def register(app: typer.Typer) -> None:
    """Add ``ray`` (``ray stop``) to the ``placelab`` app."""
    app.add_typer(ray_app, name="ray")
