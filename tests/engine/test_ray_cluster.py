"""A real Ray cluster, started as a user starts one (issue 39): a head and a second node with ``ray start``,
Ray's token authentication on, and ``placelab sweep`` / ``placelab train`` joining it with ``--address``
from a subprocess, as a user runs them.

Everything stays on loopback: the nodes use ``127.0.0.2`` and up (Ray replaces ``127.0.0.1`` by the machine's
outward address: engine/parallel/ray_cluster.py), every port a node would take by default (client server, dashboard,
its agent) is a free one, and the reference training's local runtime runs with Ray's single-machine setting
(``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: its node on 127.0.0.1). The token is a file in the test's folder
(``RAY_AUTH_TOKEN_PATH``), never ``~/.ray``.

Each node is started in a session of its own; its processes are that session's process group and their
descendants (Ray's task workers have their own groups, as children of the node's raylet). The fixture kills
exactly those, whatever happened: never ``ray stop``, which would stop the other tests' runtimes.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from engine.store.runs import RunStore
from placelab.sweep import sweep_rows
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))  # the virtualenv's `ray` command
HEAD_IP, WORKER_IP, SPARE_IP = "127.0.0.2", "127.0.0.3", "127.0.0.4"
START_S = 180  # a node's `ray start`, under load
COMMAND_S = 600  # a placelab command
GB = 1e9


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tree(pgid: int) -> list[psutil.Process]:
    """The live processes of process group ``pgid`` and all their descendants."""
    found: dict[int, psutil.Process] = {}
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid:
                found[p.pid] = p
                found.update((c.pid, c) for c in p.children(recursive=True))
        except (ProcessLookupError, psutil.Error):
            continue
    return [p for p in found.values() if _alive(p)]


def _kill(procs: list[psutil.Process]) -> None:
    """SIGKILL, and wait (at most 60 s) until they are gone."""
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()  # psutil checks the start time: a reused pid is never signalled
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)


class Node:
    """One ``ray start`` (head or worker) in a session of its own."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([RAY, "start", *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.log = log

    def wait_started(self) -> None:
        """`ray start` returns once the node is registered with the head (ray/_private/node.py)."""
        rc = self.proc.wait(timeout=START_S)
        assert rc == 0, self.log.read_text(errors="replace")[-3000:]

    def processes(self) -> list[psutil.Process]:
        return _tree(self.proc.pid)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        _kill(self.processes())


def _node_args(ip: str, temp: Path) -> list[str]:
    return [f"--node-ip-address={ip}", "--num-cpus=1", f"--temp-dir={temp}", "--disable-usage-stats",
            "--object-store-memory=100000000", "--min-worker-port=0", "--max-worker-port=0",
            f"--dashboard-agent-listen-port={free_port()}", f"--metrics-export-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}"]


@pytest.fixture(scope="module")
def cluster():
    # Ray's Unix sockets live under --temp-dir: a short folder (pytest's are too long for a socket path)
    base = Path(tempfile.mkdtemp(prefix="plray-"))
    token = base / "token"
    token.write_text(secrets.token_hex(32))
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_MODE")}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    port = free_port()
    address = f"{HEAD_IP}:{port}"
    nodes: list[Node] = []

    def add(ip: str, *extra: str) -> Node:
        node = Node([*_node_args(ip, base / ip), *extra], env, base / f"{ip}.log")
        nodes.append(node)
        node.wait_started()
        return node

    try:
        add(HEAD_IP, "--head", f"--port={port}", "--include-dashboard=false",
            f"--ray-client-server-port={free_port()}", f"--dashboard-port={free_port()}")
        add(WORKER_IP, f"--address={address}")
        yield {"address": address, "env": env, "add": lambda ip: add(ip, f"--address={address}")}
    finally:
        for node in reversed(nodes):
            node.kill()
        left = [p for node in nodes for p in node.processes()]
        shutil.rmtree(base, ignore_errors=True)
        assert not left, f"still running after the test: {left}"


_STARTED: list[subprocess.Popen] = []  # the placelab commands of the running test


@pytest.fixture(autouse=True)
def _no_command_left():
    """A test that fails midway leaves none of its placelab commands (nor their local Ray runtimes) running."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        _kill(_tree(proc.pid))
        with contextlib.suppress(OSError, ValueError):
            proc.communicate(timeout=60)


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """``placelab ARGS`` in a session of its own, as a user runs it."""
    proc = subprocess.Popen([sys.executable, "-m", "placelab.cli", *args], env=env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    _STARTED.append(proc)
    return proc


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=COMMAND_S)
    except subprocess.TimeoutExpired:
        _kill(_tree(proc.pid))
        out, err = proc.communicate()
    return proc.returncode, out, err


def _placelab(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    return _finish(_start(args, env))


def _both(args: list[str], address: str, env: dict[str, str], reference_env: dict[str, str] | None = None
          ) -> tuple[dict, dict]:
    """``placelab ARGS --address ADDRESS`` and ``placelab ARGS``, at once; their ``--json`` answers."""
    procs = [_start([*args, "--address", address, "--json"], env), _start([*args, "--json"], reference_env or env)]
    answers = []
    for code, out, err in [_finish(p) for p in procs]:
        assert code == 0, err[-3000:]
        answers.append(json.loads(out))
    return answers[0], answers[1]


def _ips(nodes: list[dict]) -> set[str]:
    return {n["ip"] for n in nodes}


SWEEP = ["sweep", "-g", "gen:chainmm", "-c", "k80x2", "--placers", "local-search,m-etf", "--budget", "4000"]


def _strip(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("run_id", "seconds_to_place")} for r in rows]


@pytest.mark.slow
@pytest.mark.cluster
def test_a_sweep_and_a_training_on_two_nodes_equal_their_runs_without_the_cluster(cluster, tmp_path):
    env, address = cluster["env"], cluster["address"]
    swept, alone = _both([*SWEEP, "--seeds", "4", "--runs-dir", str(tmp_path / "sweep")], address, env)
    assert _strip(swept["results"]) == _strip(alone["results"]) and len(swept["results"]) == 8
    assert _ips(swept["nodes"]) == {HEAD_IP, WORKER_IP}, swept["nodes"]  # tasks ran on both nodes
    assert sum(n["tasks"] for n in swept["nodes"]) == 8 and alone["nodes"] == []
    store = RunStore(tmp_path / "sweep")
    assert store.load(swept["run_id"]).meta["metrics"]["nodes"] == swept["nodes"]

    ops = [{"name": f"{c}{i}", "compute": 1.0, "output_bytes": 0.1 * GB} for c in "ab" for i in range(3)]
    edges = [{"src": s, "dst": d} for s, d in (("a0", "a1"), ("a1", "a2"), ("b0", "b1"), ("b1", "b2"))]
    graph = tmp_path / "chains.json"
    graph.write_text(json.dumps({"schema": "placelab.graph/1", "name": "chains", "ops": ops, "edges": edges}))
    runs = tmp_path / "train"
    train = ["train", "--placer", "placeto", "-g", str(graph), "-c", "k80x2", "--episodes", "4", "--param", "batch=2",
             "--seed", "3", "--workers", "2", "--threads", "1", "--health-max-random", "0", "--save",
             "--runs-dir", str(runs)]
    # the reference: 2 rollout workers on a local runtime, on loopback (see the module docstring)
    trained, local = _both(train, address, env, {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    store = RunStore(runs)
    on_cluster, reference = store.load(trained["run_id"]), store.load(local["run_id"])
    assert on_cluster.status == reference.status == "done"
    assert {k: v for k, v in trained.items() if k not in ("run_id", "wall_s")} == \
           {k: v for k, v in local.items() if k not in ("run_id", "wall_s")}
    curves = [{k: v for k, v in r.read_table("learning_curve.csv").items() if k != "wall_time"}
              for r in (on_cluster, reference)]
    assert curves[0] == curves[1] and len(curves[0]["episode"]) == 4
    workers = on_cluster.meta["progress"]
    assert workers["worker_episodes"] == [2, 2]
    assert sorted(w["ip"] for w in workers["worker_nodes"]) == [HEAD_IP, WORKER_IP]  # one worker on each node
    assert {w["ip"] for w in reference.meta["progress"]["worker_nodes"]} == {"127.0.0.1"}


@pytest.mark.slow
@pytest.mark.cluster
def test_a_missing_or_wrong_token_is_refused_in_one_line_naming_what_to_set(cluster, tmp_path):
    args = ["sweep", "-g", "gen:chainmm", "-c", "k80x2", "--placers", "m-etf", "--runs-dir", str(tmp_path),
            "--address", cluster["address"]]
    env = {k: v for k, v in cluster["env"].items() if k != "RAY_AUTH_MODE"}
    for case, extra, says in (("no token mode", {}, "it has token authentication on; set RAY_AUTH_MODE=token"),
                              ("a wrong token", {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64},
                               "it refused this process's token (RAY_AUTH_TOKEN)")):
        code, out, err = _placelab(args, {**env, **extra})
        assert code == 2 and out == "", case
        (line,) = err.strip().splitlines()
        assert line.startswith(f"error: cannot join the Ray cluster at {cluster['address']}: {says}"), line
        assert "RAY_AUTH_TOKEN_PATH" in line and len(line) <= 300 + len("error: "), line
    assert not RunStore(tmp_path).list()


@pytest.mark.slow
@pytest.mark.cluster
def test_a_node_lost_mid_sweep_its_task_runs_again_on_the_others_once(cluster, tmp_path):
    """A third node joins; it is killed (every process of it, SIGKILL) while it runs one of the sweep's tasks.
    Ray runs that task again on the other nodes (ParallelMap's retries): the sweep ends done, every
    combination once, the results those of the sweep without the cluster."""
    env, address = cluster["env"], cluster["address"]
    spare = cluster["add"](SPARE_IP)
    runs = tmp_path / "runs"
    on_cluster = _start([*SWEEP, "--seeds", "6", "--runs-dir", str(runs), "--address", address, "--json"], env)
    alone = _start([*SWEEP, "--seeds", "6", "--runs-dir", str(tmp_path / "alone"), "--json"], env)
    killed = False
    while not killed and on_cluster.poll() is None:  # until a task runs on the spare node
        procs = spare.processes()
        with contextlib.suppress(psutil.Error):
            killed = any(p.name() == "ray::place_task" for p in procs)
        if killed:
            _kill(procs)
        time.sleep(0.02)
    results = [_finish(p) for p in (on_cluster, alone)]
    assert killed, "the sweep ended before a task ran on the spare node"
    assert not spare.processes()
    for code, _, err in results:
        assert code == 0, err[-3000:]
    swept, reference = (json.loads(out) for _, out, _ in results)
    assert _strip(swept["results"]) == _strip(reference["results"]) and len(swept["results"]) == 12
    store = RunStore(runs)
    sweep = store.load(swept["run_id"])
    assert sweep.status == "done" and [r["task"] for r in sweep_rows(sweep)] == list(range(12))
    tagged = store.list(tag=f"sweep:{sweep.id}")
    assert sorted(r.id for r in tagged) == sorted(r["run_id"] for r in swept["results"])  # one run each
    assert sum(n["tasks"] for n in swept["nodes"]) == 12 and _ips(swept["nodes"]) <= {HEAD_IP, WORKER_IP, SPARE_IP}


def test_token_mode_without_a_readable_token_is_refused_before_connecting(tmp_path):
    """``RAY_AUTH_MODE=token`` with no token, or with ``RAY_AUTH_TOKEN_PATH`` naming no file: one line, exit 2,
    before any connection (a missing token file aborts a process that connects: engine/parallel/ray_cluster.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="token", HOME=str(tmp_path))  # no ~/.ray/auth_token there
    with socket.socket() as listener:  # something listens: the address is reachable
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        args = ["sweep", "-g", "gen:chainmm", "-c", "k80x2", "--placers", "m-etf", "--runs-dir", str(tmp_path),
                "--address", address]
        for extra, says in (({}, "RAY_AUTH_MODE=token but no token is set; give the head's token (`ray "
                                 "get-auth-token` there) in RAY_AUTH_TOKEN, or in a file named by RAY_AUTH_TOKEN_PATH, "
                                 "else in ~/.ray/auth_token"),
                            ({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")},
                             f"RAY_AUTH_TOKEN_PATH names '{tmp_path / 'missing'}', which cannot be read or is empty; "
                             "put the head's token there (`ray get-auth-token` on the head)")):
            code, out, err = _placelab(args, {**env, **extra})
            assert code == 2 and out == "", err
            assert err == f"error: cannot join the Ray cluster at {address}: {says}\n"


def test_what_rays_message_thread_prints_goes_to_stderr(capsys):
    import threading

    from engine.parallel.ray_cluster import RayMessagesToStderr

    messages = RayMessagesToStderr()
    messages.install()
    try:
        print("the command's own output")
        thread = threading.Thread(target=print, args=("(raylet) Task failed, retried",),
                                  name="ray_listen_error_messages")  # the name Ray gives it
        thread.start()
        thread.join()
    finally:
        messages.remove()
    print("after")
    out, err = capsys.readouterr()
    assert out == "the command's own output\nafter\n" and err == "(raylet) Task failed, retried\n"


_HELD_BACK = """
import threading
from ray._private import worker as ray_worker
from engine.parallel.tasks import ParallelMap

def raylet_says():  # what Ray's message thread does with a message from the cluster (listen_error_messages)
    ray_worker.print_to_stdstream({"lines": ["Raylet is terminated."], "pid": "raylet", "is_err": False},
                                  ignore_prefix=False)

with ParallelMap(workers=1) as executor:
    for _ in range(3):  # Ray prints the first at once and holds the repeats back until ray.shutdown
        thread = threading.Thread(target=raylet_says, name="ray_listen_error_messages")
        thread.start()
        thread.join()
    print(executor.map(abs, [(-1,)]))
print("done")
"""


def test_the_messages_ray_holds_back_as_repeats_go_to_stderr_at_shutdown(tmp_path):
    """A CI run's ``sweep --address … --json`` began with "(raylet) Raylet is terminated" after a node was killed:
    Ray printed the message's repeats to stdout in ``ray.shutdown``. Every one of them now goes to stderr."""
    proc = subprocess.run([sys.executable, "-c", _HELD_BACK], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PLACELAB_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "[1]\ndone\n"
    said = [line for line in proc.stderr.splitlines() if "Raylet is terminated." in line]
    assert len(said) == 2 and "repeated 2x" in said[1], proc.stderr[-3000:]
