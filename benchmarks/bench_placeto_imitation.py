"""Can Placeto's network represent a good placement? Imitation along Placeto's own MDP.

Issue #32 asks why Placeto's best on ``gen:chainmm`` / ``p100x4`` (work-conserving) is no better than
random search's. Two explanations differ in what they predict: the network cannot tell the groups apart
(the four shards of each matmul look alike), or it can and REINFORCE does not find the placement. This
script separates them. A teacher placement (a list scheduler's, by default HEFT's, taken to Placeto's op
groups by majority) is walked along Placeto's MDP from the policy's own start placement (``init``): at
step t the group v_t is set to the teacher's device, exactly as a policy that chose it would. The visited
states and the teacher's actions are then fitted with cross-entropy (Adam, full batch), and the script
prints the fraction of steps whose argmax is the teacher's action, and the makespan of the trained
policy's greedy episode against the teacher's and against the best of 1,000 random placements. It also
prints the makespan of the teacher's placement with each group re-drawn uniformly with probability ε
(``--noise-samples`` placements per ε): how the objective falls off around the teacher.

    .venv/bin/python benchmarks/bench_placeto_imitation.py                       # chainmm, HEFT, 1,000 epochs
    .venv/bin/python benchmarks/bench_placeto_imitation.py --graph gen:nmt --cluster k80x2 --mode placeto
    .venv/bin/python benchmarks/bench_placeto_imitation.py --param network=paper --teacher critical-path
    .venv/bin/python benchmarks/bench_placeto_imitation.py --smoothing 0.3 --then-train 200  # kept by RL?

``--then-train N`` then trains the fitted policy with Placeto's own REINFORCE for N episodes (the learning
rate and entropy weight decaying over N, as in any training) and prints the entropy and sampled runtime of
its first and last windows and its greedy episode after: whether Placeto's objective keeps the teacher's
placement or moves away from it. Fit with ``--smoothing`` (label smoothing) first: a policy fitted to
certainty samples the teacher's action every time and its gradient vanishes, so it could not move. Read it
with care: the fit saw only the teacher's walk, so after its first off-teacher action the policy acts on
states it was never fitted on, and its sampled placements can be worse than uniformly random ones.

Identical inputs with different teacher actions cap the accuracy below 1 whatever the training; the
script counts them ("conflicting states": states whose network input equals another state's exactly).
The walk is the agent's own episode with the teacher's actions (``PlacetoAgent.episodes(actions=…)``) and
the fit calls its logits (``_logits``), so the states are exactly those a policy would see.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from learning_runs import learning_setting, parse_params, train_agent, window_medians
from policies.registry import make_placer
from policies.rl.core.health import random_search
from policies.rl.core.reinforce import Budget
from policies.rl.registry import make_agent


def _teacher_groups(task, op_devices: np.ndarray) -> np.ndarray:
    """Each group's device: the one most of its ops have in the op-level placement (feasible devices only)."""
    out = np.empty(task.num_groups, dtype=np.int64)
    for g in range(task.num_groups):
        votes = np.bincount(op_devices[task.op_group == g], minlength=task.num_devices).astype(float)
        votes[~task.feasible[g]] = -1.0
        out[g] = int(np.argmax(votes))
    return out


def _walk(agent, task, teacher: np.ndarray) -> tuple[list, list[int]]:
    """The states Placeto's MDP visits when every action is the teacher's, and those actions."""
    ep = agent.episodes([task], ["g"], np.random.default_rng(0), actions=[teacher])[0]
    return [(task, x, v) for x, v in zip(ep.features, ep.current, strict=True)], ep.actions


def _conflicts(states: list, actions: list[int]) -> int:
    """States whose input (features and current node) equals another's while the teacher's action differs."""
    seen: dict[bytes, set[int]] = {}
    for (_, x, v), a in zip(states, actions, strict=True):
        key = x.tobytes() + int(v).to_bytes(4, "little")
        seen.setdefault(key, set()).add(a)
    return sum(1 for acts in seen.values() if len(acts) > 1)


def _noise_curve(task, teacher: np.ndarray, samples: int, seed: int) -> list[tuple[float, float]]:
    """The median makespan (ms) of the teacher's placement with each group re-drawn uniformly with probability ε."""
    rng = np.random.default_rng(seed)
    curve = []
    for eps in (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0):
        runs = []
        for _ in range(samples):
            dev = teacher.copy()
            hit = rng.random(len(dev)) < eps
            dev[hit] = [rng.choice(np.flatnonzero(task.feasible[g])) for g in np.flatnonzero(hit)]
            runs.append(task.evaluate(dev).objective)
        curve.append((eps, 1e3 * float(np.median(runs))))
    return curve


def _then_train(agent, task, episodes: int, seed: int) -> dict:
    """Placeto's REINFORCE from the fitted policy for ``episodes`` episodes: first and last windows, greedy after."""
    trainer, rows = train_agent(agent, task, Budget(episodes=episodes), seed)
    w = max(1, min(50, len(rows) // 4))
    first, last = rows[:w], rows[-w:]
    sampled = window_medians(rows, ["sampled_runtime"], w)
    greedy = task.evaluate(agent.place(task, np.random.default_rng(seed), greedy=True))
    return {"episodes": len(rows), "window": w,
            "entropy_first": float(np.mean([r["entropy"] for r in first])),
            "entropy_last": float(np.mean([r["entropy"] for r in last])),
            "sampled_first_ms": 1e3 * sampled["sampled_runtime_first"],
            "sampled_last_ms": 1e3 * sampled["sampled_runtime_last"],
            "best_ms": 1e3 * trainer.best["g"].objective, "greedy_after_ms": 1e3 * greedy.objective}


def run(graph_spec: str, cluster_name: str, mode: str | None, teacher_name: str, params: dict, epochs: int,
        lr: float, seed: int, then_train: int = 0, smoothing: float = 0.0, noise_samples: int = 0) -> dict:
    graph, cluster, config, task = learning_setting("placeto", graph_spec, cluster_name, mode, params)
    agent = make_agent("placeto", cluster.num_devices, config.to_dict(), seed=seed, tasks=[task])
    op_devices = make_placer(teacher_name).place(graph, cluster, seed=seed).devices
    teacher = _teacher_groups(task, np.asarray(op_devices))
    teacher_ev = task.evaluate(teacher)
    states, actions = _walk(agent, task, teacher)
    target = torch.tensor(actions)
    opt = torch.optim.Adam(agent.model.parameters(), lr=lr)
    t0 = time.perf_counter()
    accuracy = []
    for epoch in range(epochs):
        opt.zero_grad()
        logits = agent._logits(states, grad=True)
        loss = torch.nn.functional.cross_entropy(logits, target, label_smoothing=smoothing)
        loss.backward()
        opt.step()
        if epoch % max(1, epochs // 10) == 0 or epoch == epochs - 1:
            accuracy.append((epoch, float((logits.argmax(1) == target).float().mean()), loss.item()))
    fit_s = time.perf_counter() - t0
    with torch.no_grad():
        final = float((agent._logits(states).argmax(1) == target).float().mean())
    greedy = task.evaluate(agent.place(task, np.random.default_rng(seed), greedy=True))
    start = task.evaluate(agent.fixed_start[task])
    rand = random_search(task, 1000, seed=seed).objective
    trained = _then_train(agent, task, then_train, seed) if then_train else None
    noise = _noise_curve(task, teacher, noise_samples, seed) if noise_samples else []
    return {"then_train": trained, "noise": noise,
            "graph": graph_spec, "cluster": cluster_name, "mode": mode, "teacher": teacher_name, "params": params,
            "groups": task.num_groups, "steps": len(states), "conflicting_states": _conflicts(states, actions),
            "accuracy": final, "curve": accuracy, "fit_s": round(fit_s, 1),
            "teacher_ms": 1e3 * teacher_ev.objective, "greedy_ms": 1e3 * greedy.objective,
            "start_ms": 1e3 * start.objective, "random_best_of_1000_ms": 1e3 * rand}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="gen:chainmm")
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--mode", default="work_conserving", help="simulation mode ('' for the cluster's own)")
    ap.add_argument("--teacher", default="heft", help="a registered placer whose placement is imitated")
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE, a Placeto parameter")
    ap.add_argument("--smoothing", type=float, default=0.0,
                    help="label smoothing of the fit (0.3: the policy keeps the teacher's action with p ~ 0.78 on "
                         "4 devices, so that REINFORCE can still move it)")
    ap.add_argument("--then-train", type=int, default=0, metavar="N",
                    help="then train the fitted policy with Placeto's REINFORCE for N episodes")
    ap.add_argument("--noise-samples", type=int, default=300, metavar="N",
                    help="the teacher's placement with each group re-drawn with probability ε: N placements per ε "
                         "(0: skip)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    params = parse_params(args.param)
    r = run(args.graph, args.cluster, args.mode or None, args.teacher, params, args.epochs, args.lr, args.seed,
            args.then_train, args.smoothing, args.noise_samples)
    if args.json:
        print(json.dumps(r))
        return
    print(f"{r['graph']} on {r['cluster']} ({r['mode'] or 'cluster mode'}), {r['groups']} groups, teacher "
          f"{r['teacher']} ({r['teacher_ms']:.1f} ms), params {params or 'defaults'}")
    for epoch, acc, loss in r["curve"]:
        print(f"  epoch {epoch:>4}: accuracy {acc:.3f}, cross-entropy {loss:.4f}")
    print(f"accuracy {r['accuracy']:.3f} over {r['steps']} steps ({r['conflicting_states']} conflicting states), "
          f"{r['fit_s']} s; greedy episode {r['greedy_ms']:.1f} ms (start {r['start_ms']:.1f} ms, teacher "
          f"{r['teacher_ms']:.1f} ms, best of 1,000 random {r['random_best_of_1000_ms']:.1f} ms)")
    if r["noise"]:
        print("teacher with each group re-drawn with probability ε, median: "
              + ", ".join(f"ε {eps:g}: {ms:.1f} ms" for eps, ms in r["noise"]))
    t = r["then_train"]
    if t:
        print(f"then {t['episodes']} episodes of REINFORCE (windows of {t['window']}): entropy "
              f"{t['entropy_first']:.3f} -> {t['entropy_last']:.3f}, sampled median {t['sampled_first_ms']:.1f} -> "
              f"{t['sampled_last_ms']:.1f} ms, best {t['best_ms']:.1f} ms, greedy episode after "
              f"{t['greedy_after_ms']:.1f} ms")


if __name__ == "__main__":
    main()
