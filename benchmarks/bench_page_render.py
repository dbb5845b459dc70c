"""How long does each page of the app take to render with the bundled runs? Issue 58, item 6 (goal: ≤ 3 s idle).

Starts the app (``streamlit run dashboard/app.py``) on an empty user run store in a temporary folder, the
bundled runs (``runs/``) as its examples, and drives Debian's headless ``/usr/bin/chromium`` with Playwright
(never ``playwright install``). Each page is opened from the sidebar ``--repeats`` times, in turn. A render is timed
from the click to the moment the page's title is shown, Streamlit's status widget (its *Stop* button while the
script runs) is gone, no element is a loading skeleton, a spinner or stale, and every plotly chart has drawn its
SVG, checked every 50 ms; the page must stay so for three checks in a row (the status widget shows up only some
time into a run, the skeletons cover that time), and the time is read at the first of them. The first visit of a
page (its caches cold) is reported apart from the median of the later ones.

Usage::

    .venv/bin/python benchmarks/bench_page_render.py
    .venv/bin/python benchmarks/bench_page_render.py --repeats 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_trace_view import start_streamlit  # a sibling script: streamlit on a free port, once healthy

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
PAGES = ("Home", "Graphs", "Place", "Train", "Compare", "Runs", "Papers", "Fidelity")
GOAL_S = 3.0
_READY_JS = """(title) => {
  const h1 = [...document.querySelectorAll('h1')].some(h => h.innerText.trim().startsWith(title));
  const running = document.querySelector('[data-testid="stStatusWidget"]');  // shown (Stop) while a run lasts
  const busy = document.querySelector('[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]');
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const drawn = charts.every(c => c.querySelector('.main-svg'));
  return h1 && !running && !busy && drawn;
}"""


def _start_app(runs_dir: Path, log) -> tuple[subprocess.Popen, str]:
    try:
        return start_streamlit(str(REPO / "dashboard" / "app.py"), seconds=300, out=log,
                               env={**os.environ, "PLACELAB_RUNS_DIR": str(runs_dir)})
    except RuntimeError:
        raise SystemExit(f"streamlit did not start; see {log.name}") from None


def _render_s(page, title: str) -> float:
    """Seconds from the sidebar click on ``title`` until the page is drawn (module docstring)."""
    heading = "placelab" if title == "Home" else title
    t0 = time.perf_counter()
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    page.wait_for_timeout(100)  # the click's script run starts; the previous page's heading may still show
    steady = 0
    while steady < 3:
        steady = steady + 1 if page.evaluate(_READY_JS, heading) else 0
        if time.perf_counter() - t0 > 120:
            raise SystemExit(f"page {title} did not finish rendering in 120 s")
        page.wait_for_timeout(50)
    return time.perf_counter() - t0 - 0.1  # at the first of the three checks that found it drawn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="visits of each page (the first reported apart)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {p: [] for p in PAGES}
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "streamlit.log", "w") as log:
        proc, url = _start_app(Path(tmp) / "runs", log)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
                page.goto(url)
                page.locator("h1", has_text="placelab").wait_for(timeout=120_000)
                for _ in range(args.repeats):
                    for title in (*PAGES[1:], PAGES[0]):  # Home last: the app opened on it
                        times[title].append(_render_s(page, title))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    rows = [{"page": p, "first_s": t[0], "median_later_s": statistics.median(t[1:]) if len(t) > 1 else None,
             "slowest_s": max(t)} for p, t in times.items()]
    if args.json:
        print(json.dumps({"goal_s": GOAL_S, "repeats": args.repeats, "pages": rows}))
        return
    print(f"seconds to render each page with the bundled runs (goal ≤ {GOAL_S:g} s), {args.repeats} visits each")
    print(f"{'page':10s} {'first':>7s} {'median':>7s} {'slowest':>8s}")
    for r in rows:
        med = "—" if r["median_later_s"] is None else f"{r['median_later_s']:.2f}"
        print(f"{r['page']:10s} {r['first_s']:7.2f} {med:>7s} {r['slowest_s']:8.2f}")


if __name__ == "__main__":
    main()
