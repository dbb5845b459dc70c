"""Train: start a learned placer in the background, watch its learning curve live, stop and resume it.

Training runs as ``placelab train … --save`` in a separate process (``dashboard/background.py``);
this page only reads the run store. While anything trains, the list of training runs is a
fragment that re-reads the store every :data:`POLL_S` seconds; the rest of the page stays put.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.app_pages.stored import (
    MAX_CURVE_POINTS,
    health_stored,
    learning_curve,
    seed_groups,
    training_health,
)
from dashboard.app_pages.views import curve_controls
from dashboard.background import Job, job_of_run, launch, list_jobs, made_by, resume_command, train_command
from dashboard.common import fmt_ms, graph_from_spec, guard, run_store, show_error, show_figure
from dashboard.context import current_cluster
from dashboard.figures import learning_curves
from engine.runs import Run, RunStore

POLL_S = 2.0
#: Runs shown as cards at once (each with its own live curve).
MAX_CARDS = 6
ACTIVE = ("running", "stopping", "resuming")
SUGGESTED_GRAPHS = {
    "gen:random?ops=200&seed=1": "a random DAG of 200 ops — trains in seconds",
    "gen:family-cifar10?index=0&seed=0": "one graph of Placeto's cifar10 family (~900 ops)",
    "gen:family-nmt?index=0&seed=0": "one graph of Placeto's nmt family (~3,400 ops)",
    "family:cifar10:train": "the 16 training graphs of the cifar10 family (Placeto §4.2)",
    "family:nmt:train": "the 16 training graphs of the nmt family (Placeto §4.2)",
    "family:ptb:train": "the 16 training graphs of the ptb family (Placeto §4.2)",
}
#: Hyper-parameters shown above the fold; the others of the placer's config are in an expander.
KEY_PARAMETERS = ("groups", "batch", "samples", "lr", "entropy", "grouping")


@dataclass
class TrainingState:
    """What the store holds about training: runs (newest first), their jobs and shown status, loose jobs."""

    runs: list[Run]
    jobs: dict[str, Job | None]
    status: dict[str, str]
    starting: list[Job]  # launched, no run created yet
    broken: list[Job]  # ended with an error before creating a run

    @property
    def active(self) -> bool:
        return bool(self.starting) or any(s in ACTIVE for s in self.status.values())


def shown_status(run: Run, job: Job | None) -> str:
    """The run's status with what the page knows besides: ``stopping`` (a stop was requested) and
    ``resuming`` (a resume process is loading but has not taken the run over yet)."""
    from policies.rl.run_files import STOP_REQUEST

    if run.status == "running":
        return "stopping" if (run.path / STOP_REQUEST).exists() else "running"
    if job is not None and job.resume_of == run.id and job.alive:
        return "resuming"
    return run.status


def training_state(store: RunStore) -> TrainingState:
    runs = store.list(kind="train")
    jobs = list_jobs(store.root, kind="train")
    by_run = {r.id: job_of_run(jobs, r) for r in runs}
    loose = [j for j in jobs if j.resume_of is None and not any(made_by(j, r) for r in runs)]
    return TrainingState(runs, by_run, {r.id: shown_status(r, by_run[r.id]) for r in runs},
                         starting=[j for j in loose if j.alive], broken=[j for j in loose if j.failed])


def run_row(run: Run, status: str) -> dict[str, Any]:
    """A row of the training-runs table."""
    m = run.meta
    p = m.get("progress") or {}
    total = p.get("episodes_total")
    best = p.get("best_runtime_s")
    return {
        "run": m.get("name") or run.id,
        "status": status,
        "placer": m.get("placer"),
        "graphs": (m.get("parameters") or {}).get("graphs") or (m.get("graph") or {}).get("name"),
        "cluster": m.get("cluster"),
        "episodes": f"{p.get('episodes', 0)} / {total}" if total else str(p.get("episodes", 0)),
        "best runtime (ms)": None if best is None else best * 1e3,
        "placements evaluated": p.get("placements_evaluated"),
        "wall (s)": p.get("wall_s"),
        "id": run.id,
    }


# -- starting a run ----------------------------------------------------------------------------


def _use_suggestion() -> None:
    if st.session_state.get("train_suggestion"):
        st.session_state["train_graphs"] = st.session_state["train_suggestion"]


def _parameter_widget(container: Any, placer: str, f: Any) -> Any:
    """One widget for config field ``f``, typed by its annotation, with its meaning and source as help."""
    import dataclasses
    import json

    meta, annotation = f.metadata, str(f.type)
    default = f.default_factory() if f.default is dataclasses.MISSING else f.default
    key, label = f"train_{placer}_{f.name}", f.name.replace("_", " ")
    text = f"{meta['doc']} — default {default!r}: {meta['source']}"
    if meta.get("choices"):
        options = list(meta["choices"])
        return container.selectbox(label, options, index=options.index(default), key=key, help=text)
    if annotation.startswith("bool"):
        return container.checkbox(label, value=default, key=key, help=text)
    if annotation.startswith(("int", "float")):
        cast = int if annotation.startswith("int") else float
        low, high = (None if b is None else cast(b) for b in (meta.get("low"), meta.get("high")))
        value = container.number_input(label, value=default, min_value=low, max_value=high,
                                       step=1 if cast is int else None, format=None if cast is int else "%g",
                                       placeholder="auto", key=key, help=text)
        return None if value is None else cast(value)
    raw = container.text_input(label, value="" if default is None else json.dumps(default), placeholder="auto",
                               key=key, help=text + " (JSON; blank: auto)").strip()
    return json.loads(raw) if raw else None


def _hyper_parameters(placer: str) -> dict[str, Any]:
    """Widgets for the placer's registered config fields; returns those that differ from its defaults."""
    from policies.rl.registry import config_fields, make_config

    fields = config_fields(placer)
    defaults = make_config(placer, {}).to_dict()
    key_fields = [f for f in fields if f.name in KEY_PARAMETERS]
    values: dict[str, Any] = {}
    for i, f in enumerate(key_fields):
        if i % 4 == 0:
            cols = st.columns(4)
        values[f.name] = _parameter_widget(cols[i % 4], placer, f)
    with st.expander("All hyper-parameters"):
        cols = st.columns(4)
        for i, f in enumerate(f for f in fields if f.name not in KEY_PARAMETERS):
            values[f.name] = _parameter_widget(cols[i % 4], placer, f)
    return {k: v for k, v in values.items() if v != defaults.get(k)}


def _check(placer: str, graphs: str, params: dict[str, Any]) -> None:
    """Raise a PlacelabError (one sentence) for input the training process would refuse."""
    from engine.sources import expand_graph_specs
    from policies.rl.registry import make_config

    expand_graph_specs(graphs)
    make_config(placer, params)
    for part in (p.strip() for p in graphs.split(",")):
        if part and not part.startswith("family:"):
            graph_from_spec(part)


def _start_form(store: RunStore) -> None:
    from policies.rl.registry import learned_placers

    st.subheader("New training run")
    placers = learned_placers()
    cols = st.columns(2)
    placer = cols[0].selectbox("Learned placer", list(placers), key="train_placer",
                               format_func=lambda n: placers[n].description.split(":")[0])
    cluster = current_cluster().name
    cols[1].text_input("Cluster (sidebar)", value=cluster, disabled=True, key="train_cluster_shown",
                       help="Training uses the sidebar's cluster preset with the preset's simulation settings")
    st.session_state.setdefault("train_graphs", next(iter(SUGGESTED_GRAPHS)))
    cols = st.columns([3, 2])
    graphs = cols[0].text_input("Graphs", key="train_graphs",
                                help="Graph specs, comma-separated: a file, gen:NAME?k=v, or family:nmt|ptb|cifar10"
                                     "[:train|:test] (CONTRACTS §5)").strip()
    cols[1].selectbox("Suggestions", list(SUGGESTED_GRAPHS), index=None, key="train_suggestion",
                      placeholder="pick one to fill in Graphs", on_change=_use_suggestion,
                      format_func=lambda s: f"{s} — {SUGGESTED_GRAPHS[s]}")
    params = _hyper_parameters(placer)
    cols = st.columns(5, vertical_alignment="bottom")
    episodes = int(cols[0].number_input("episodes", value=500, min_value=1, step=100, key="train_episodes",
                                        help="Episode budget; the run also stops when its reward settles "
                                             "(within 2 % over 1000 episodes, Placeto App. A.7)"))
    seed = int(cols[1].number_input("seed", value=0, min_value=0, step=1, key="train_seed"))
    name = cols[2].text_input("run name (optional)", key="train_name").strip()
    workers = int(cols[3].number_input("rollout workers", value=0, min_value=0, step=1, key="train_workers",
                                       help="0: roll out in the training process; N: on N Ray workers "
                                            "(README, Sweeps and Ray)"))
    command = train_command(placer, graphs, cluster, episodes=episodes, params=params, seed=seed, name=name or None,
                            runs_dir=store.root, workers=workers)
    with st.expander("Command line"):
        st.code(command_text(command), language="bash")
    if cols[4].button("Start training", type="primary", key="train_start"):
        with guard("Cannot start training"), st.spinner("Checking the graphs ..."):
            _check(placer, graphs, params)
            job = launch(store.root, command, label=name or f"{placer} on {graphs}")
            st.success(f"Started training {job.label} (process {job.pid}); it appears below once its graphs "
                       "are loaded.")


# -- the runs ----------------------------------------------------------------------------------


def _selection(state: TrainingState) -> list[Run]:
    """Runs to show as cards: the user's choice; new runs join it as they appear."""
    ids = [r.id for r in state.runs]
    chosen = st.session_state.get("train_selected")
    if chosen is None:
        chosen = [i for i in ids if state.status[i] in ACTIVE] or ids[:1]
    else:
        seen = st.session_state.get("train_seen", set())
        chosen = [i for i in chosen if i in ids] + [i for i in ids if i not in seen and i not in chosen]
    st.session_state["train_selected"] = chosen[:MAX_CARDS]
    st.session_state["train_seen"] = set(ids)
    by_id = {r.id: r for r in state.runs}
    picked = st.multiselect("Runs shown", ids, key="train_selected", max_selections=MAX_CARDS,
                            format_func=lambda i: f"{by_id[i].meta.get('name') or i} ({state.status[i]})")
    return [by_id[i] for i in picked]


def _loose_jobs(state: TrainingState) -> None:
    for job in state.starting:
        cols = st.columns([5, 1])
        cols[0].info(f"Starting {job.label} (process {job.pid}): loading the graphs and the learned placer ...")
        if cols[1].button("Cancel", key=f"train_cancel_{job.id}"):
            job.cancel()
            st.rerun()
    for job in state.broken:
        lines = job.log_tail().splitlines()
        show_error(f"Training {job.label} ended before creating its run (exit code {job.returncode}): "
                   f"{lines[-1] if lines else 'no output'}")
        with st.expander(f"Log of {job.label}"):
            st.code(job.log_tail(40) or "(empty)", language="text")
        if st.button("Dismiss", key=f"train_dismiss_{job.id}"):
            job.forget()
            st.rerun()


#: How a training run ended (``metrics.stop_reason``), in words.
STOP_PHRASES = {"stopped": "stopped on request", "converged": "ended: reward settled (Placeto App. A.7)",
                "episodes": "ended: episode budget reached", "placements": "ended: placement budget reached",
                "seconds": "ended: time budget reached"}


def stop_phrase(reason: str) -> str:
    """``metrics.stop_reason`` as a phrase for the status line."""
    return STOP_PHRASES.get(reason, f"ended: {reason}")


def command_text(command: list[str]) -> str:
    """The ``placelab …`` command line of a launched training, shell-quoted so it can be pasted."""
    return shlex.join(["placelab", *command[3:]])


def _progress_text(run: Run, status: str) -> tuple[float, str]:
    m = run.meta
    p = m.get("progress") or {}
    done, total = int(p.get("episodes") or 0), p.get("episodes_total")
    parts = [status, f"{done} / {total} episodes" if total else f"{done} episodes",
             f"best {fmt_ms(p.get('best_runtime_s'))}", f"{p.get('placements_evaluated') or 0} placements evaluated",
             f"{float(p.get('wall_s') or 0):.0f} s"]
    if p.get("worker_episodes"):
        parts.append("workers " + " / ".join(str(n) for n in p["worker_episodes"]) + " episodes")
    reason = (m.get("metrics") or {}).get("stop_reason")
    if reason and status not in ACTIVE:
        parts.append(stop_phrase(reason))
    return (min(done / total, 1.0) if total else 0.0), " · ".join(parts)


def _controls(store: RunStore, run: Run, status: str, job: Job | None) -> None:
    from policies.rl.run_files import CHECKPOINT, request_stop

    if status == "running":
        if st.button("Stop", key=f"train_stop_{run.id}", help="Stops after the current update; the run keeps a "
                                                                 "checkpoint and can be resumed"):
            request_stop(run)
            st.rerun()
    elif status in ("stopping", "resuming"):
        st.button("Stop", key=f"train_stop_{run.id}", disabled=True)
    elif status in ("done", "interrupted") and CHECKPOINT not in run.files():
        st.caption("This run kept no checkpoint, so it cannot be resumed.")
    elif status in ("done", "interrupted"):
        done = int((run.meta.get("progress") or {}).get("episodes") or 0)
        total = (run.meta.get("progress") or {}).get("episodes_total") or done
        cols = st.columns([2, 1, 3], vertical_alignment="bottom")
        target = int(cols[0].number_input("train up to (episodes in all)", min_value=done + 1,
                                          value=max(done + 1, 2 * int(total)), step=100,
                                          key=f"train_resume_eps_{run.id}"))
        if cols[1].button("Resume", key=f"train_resume_{run.id}"):
            with guard("Cannot resume"):
                launch(store.root, resume_command(run.id, episodes=target, runs_dir=store.root),
                       label=run.meta.get("name") or run.id, resume_of=run.id)
                st.rerun()


def _curve_settings() -> tuple[str, float]:
    """The x axis and smoothing chosen above the cards (their widgets: :func:`curve_controls`)."""
    return (st.session_state.get("train_curve_x", "episode"),
            float(st.session_state.get("train_curve_smoothing", 0.6)))


def health_table(health: Any) -> pd.DataFrame:
    """The learning-health numbers: entropy and sampled runtime, first vs last window."""
    def ms(x: float | None) -> float | None:
        return None if x is None else x * 1e3

    return pd.DataFrame([
        {"": "entropy per decision (nats)", "first window": health.entropy_first, "last window": health.entropy_last,
         "last / first": (health.entropy_last / health.entropy_first
                          if health.entropy_first and health.entropy_last is not None else None)},
        {"": "entropy, share of uniform", "first window": health.entropy_first_ratio,
         "last window": health.entropy_last_ratio,
         "last / first": (health.entropy_last_ratio / health.entropy_first_ratio
                          if health.entropy_first_ratio and health.entropy_last_ratio is not None else None)},
        {"": "sampled runtime, median (ms)", "first window": ms(health.runtime_first_s),
         "last window": ms(health.runtime_last_s), "last / first": health.runtime_ratio},
    ])


def random_table(health: Any) -> pd.DataFrame:
    """Per graph: the best found vs the best of as many uniformly random placements."""
    return pd.DataFrame([{"graph": c.graph, "placements (training)": c.placements_trained,
                          "random placements": c.placements, "best found (ms)": c.found_makespan_s * 1e3,
                          "random search's best (ms)": c.random_makespan_s * 1e3, "found / random": c.ratio}
                         for c in health.random_search])


def _learning_health(run: Run, status: str) -> None:
    """A finished run's learning-health verdict (policies/rl/health.py): the verdict, its numbers, and the
    never-left-uniform line when it applies."""
    if status in ACTIVE or status == "failed":
        return
    health = training_health(run)
    if health is None:
        return
    from policies.rl.health import NEVER_LEFT_UNIFORM

    text = f"**Learning health: {health.label}.** {health.message[0].upper()}{health.message[1:]}."
    if health.never_left_uniform:
        st.warning(f"**Learning health:** {NEVER_LEFT_UNIFORM[0].upper()}{NEVER_LEFT_UNIFORM[1:]}.",
                   icon=":material/warning:")
    elif health.verdict == "learned":
        st.success(text, icon=":material/check_circle:")
    else:
        st.info(text)
    how = "" if health_stored(run) else (" Computed now from the stored learning curve: this run was stored before "
                                         "training runs kept their verdict.")
    st.caption(f"{health.summary}. Uniform entropy: {health.uniform_basis}.{how}")
    with st.expander("Learning health in numbers"):
        st.dataframe(health_table(health), hide_index=True, key=f"train_health_{run.id}")
        if health.random_search:
            st.dataframe(random_table(health), hide_index=True, key=f"train_health_random_{run.id}")
        else:
            st.caption(f"No random-search comparison: {health.random_missing}.")


def _run_card(store: RunStore, run: Run, status: str, job: Job | None) -> None:
    m = run.meta
    graphs = (m.get("parameters") or {}).get("graphs") or (m.get("graph") or {}).get("name")
    with st.container(border=True):
        st.markdown(f"**{m.get('name') or run.id}** · {m.get('placer')} on `{graphs}` · {m.get('cluster')} · "
                    f"`{run.id}`")
        frac, text = _progress_text(run, status)
        st.progress(frac, text=text)
        _controls(store, run, status, job)
        if status == "failed":
            show_error(f"Training failed: {m.get('error') or 'no error recorded'}")
            if job is not None:
                st.code(job.log_tail(20) or "(the process wrote no output)", language="text")
        elif job is not None and job.resume_of == run.id and job.failed:
            lines = job.log_tail().splitlines()
            show_error(f"Resuming failed: {lines[-1] if lines else f'exit code {job.returncode}'}")
        _learning_health(run, status)
        curve = learning_curve(run)
        if curve is None:
            st.caption("No episode has finished yet.")
            return
        name = m.get("name") or run.id
        x, smoothing = _curve_settings()
        title = f"{m.get('placer')} on {graphs} · {m.get('cluster')}"
        show_figure(learning_curves({name: curve}, x=x, smoothing=smoothing, max_points=MAX_CURVE_POINTS,
                                    title=title), key=f"train_curve_{run.id}")
        from policies.rl.run_files import CURVE

        path = run.path / CURVE
        st.download_button("Learning curve (CSV)", lambda: path.read_bytes(), file_name=f"{run.id}-learning_curve.csv",
                           mime="text/csv", key=f"train_dl_{run.id}")


def _training_runs(store: RunStore, polling: bool) -> None:
    state = training_state(store)
    if state.active != polling:  # start or stop polling: the fragment's interval is set by a full run
        st.rerun()
    st.subheader("Training runs")
    _loose_jobs(state)
    if not state.runs:
        if not state.starting:
            st.info("No training runs yet — start one above, or run `placelab train --placer placeto --graphs SPEC "
                    "--cluster C --save`.")
        return
    st.dataframe(pd.DataFrame([run_row(r, state.status[r.id]) for r in state.runs]), hide_index=True)
    chosen = _selection(state)
    curve_controls("train")
    if len(chosen) > 1:
        x, smoothing = _curve_settings()
        show_figure(learning_curves(seed_groups(chosen), x=x, smoothing=smoothing, max_points=MAX_CURVE_POINTS),
                    key="train_overlay")
    for run in chosen:
        _run_card(store, run, state.status[run.id], state.jobs[run.id])


def page() -> None:
    st.title("Train")
    st.caption("Trains a learned placer in a background process that stores its run (policy, checkpoint, learning "
               "curve) like `placelab train … --save`; this page polls the run store, so you can leave it and come "
               "back, or train several at once.")
    store = run_store()
    with st.spinner("Loading the learned placers ..."):
        _start_form(store)
    polling = training_state(store).active
    st.fragment(run_every=POLL_S if polling else None)(_training_runs)(store, polling)
