"""``placelab ray stop``: stops what a killed driver's local Ray runtime left running (issue #34, item 9).

No Ray here: the state file of a driver that is gone (an exited child) names a process that ignores
SIGTERM, as Ray's agents do, and another process carries the driver's mark only; both are stopped
(SIGKILL after SIGTERM), the file is removed, and the command says so in one line (or one JSON object).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
from cli_run import run_cli

STUBBORN = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(600)")


def _ready(env: dict | None = None) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_ray_stop_kills_what_a_gone_driver_left_and_removes_its_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path))
    driver = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    driver_started = psutil.Process(driver.pid).create_time()
    driver.stdin.close()
    driver.wait(timeout=60)  # gone (and reaped)
    mark = f"{driver.pid}-{driver_started:.2f}"
    recorded, marked = _ready(), _ready({**os.environ, "PLACELAB_RAY_DRIVER": mark})
    try:
        (tmp_path / "ray-local").mkdir()
        (tmp_path / "ray-local" / f"{driver.pid}.json").write_text(json.dumps({
            "schema": "placelab.ray-local/1", "driver": {"pid": driver.pid, "create_time": driver_started},
            "mark": mark, "session_dir": None,
            "processes": [{"pid": recorded.pid, "create_time": psutil.Process(recorded.pid).create_time(),
                           "name": "stubborn"}]}))
        code, out, err = run_cli(capsys, "ray", "stop", "--json")
        assert code == 0 and err == "", err
        result = json.loads(out)
        assert sorted(s["pid"] for s in result["stopped"]) == sorted([recorded.pid, marked.pid])
        assert {s["signal"] for s in result["stopped"]} == {"SIGKILL"}  # SIGTERM was ignored
        assert result["drivers"] == [driver.pid] and result["problems"] == []
        assert recorded.wait(timeout=60) == marked.wait(timeout=60) == -9
        assert list((tmp_path / "ray-local").iterdir()) == []
        code, out, err = run_cli(capsys, "ray", "stop")
        assert (code, out.strip(), err) == (0, "no Ray processes left behind by placelab", "")
    finally:
        for p in (recorded, marked):
            p.kill()
            p.wait(timeout=60)


def test_ray_stop_one_line_names_what_it_stopped(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path))
    victim = _ready()
    try:
        started = psutil.Process(victim.pid).create_time()
        (tmp_path / "ray-local").mkdir()
        (tmp_path / "ray-local" / "1.json").write_text(json.dumps({  # a driver pid that is not running now
            "schema": "placelab.ray-local/1", "driver": {"pid": 2**22 + 7, "create_time": time.time() - 60},
            "mark": "none", "session_dir": None,
            "processes": [{"pid": victim.pid, "create_time": started, "name": "stubborn"}]}))
        code, out, err = run_cli(capsys, "ray", "stop")
        assert code == 0 and err == ""
        assert out.strip().splitlines() == [out.strip()]
        assert out.startswith("stopped 1 Ray process(es)") and "1 needed SIGKILL" in out
        assert victim.wait(timeout=60) == -9
    finally:
        victim.kill()
        victim.wait(timeout=60)
