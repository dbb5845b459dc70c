"""The app in a real browser: every page, a placement with two placers, comparison, a trace download,
a training started from the Train page and watched live.

Screenshots land in ``tests/artifacts/``. The graph-view timings are printed (run with ``-s``);
the only timed check is a generous 60 s guard against a hang.
"""

import json
import re
import time
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = pytest.mark.e2e

GUARD_MS = 60_000


def wait_idle(page) -> None:
    """Until the script run finishes (Streamlit's running indicator is gone)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=GUARD_MS)


def screenshot(page, shot: str) -> None:
    """The whole page: Streamlit scrolls inside its main container, so grow the viewport to the content."""
    height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": 1500, "height": min(int(height) + 40, 9000)})
    page.wait_for_timeout(700)
    page.screenshot(path=str(ARTIFACTS / f"{shot}.png"))
    page.set_viewport_size({"width": 1500, "height": 1000})


def assert_clean(page, shot: str) -> None:
    wait_idle(page)
    screenshot(page, shot)
    assert page.locator('[data-testid="stException"]').count() == 0, f"exception shown on {shot}"
    assert "Traceback" not in page.inner_text("body"), f"traceback shown on {shot}"


def goto(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    page.locator("h1", has_text=title).first.wait_for()
    wait_idle(page)


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label``."""
    box = page.locator('[data-testid="stSelectbox"]', has_text=label).first
    box.get_by_role("combobox").click()
    page.locator('[role="option"]', has_text=option).first.click()
    wait_idle(page)


def graph_canvas_ms(page, start: float, note: str = "") -> float:
    """Milliseconds from ``start`` until the graph iframe saying ``note`` has drawn its vis-network canvas."""
    frame = page.frame_locator("iframe").last
    frame.locator("#placelab-view-note", has_text=note).wait_for(timeout=GUARD_MS)
    frame.locator("#mynetwork canvas").wait_for(timeout=GUARD_MS)
    return (time.perf_counter() - start) * 1e3


def test_click_through_the_app(browser_page, app_url):
    page = browser_page
    page.goto(app_url)
    page.locator("h1", has_text="placelab").wait_for()
    assert_clean(page, "01-home")

    goto(page, "Graphs")
    page.locator('[data-testid="stMetric"]', has_text="Ops").first.wait_for()
    graph_canvas_ms(page, time.perf_counter())
    assert_clean(page, "02-graphs")

    goto(page, "Place")
    page.get_by_role("button", name="Run placers").click()
    page.get_by_text("Results on k80x2").wait_for(timeout=GUARD_MS)
    wait_idle(page)
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 4
    assert_clean(page, "03-place-timeline")
    page.get_by_role("tab", name="Load and memcpy").first.click()
    page.wait_for_timeout(800)
    assert_clean(page, "04-place-load")
    page.get_by_role("button", name="Save as run").first.click()
    page.get_by_text("Saved as run").wait_for()

    goto(page, "Compare")
    page.get_by_text("Timelines on one time axis").wait_for()
    page.wait_for_timeout(1000)
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 3
    assert_clean(page, "05-compare")

    goto(page, "Runs")
    page.get_by_text("Downloads").first.wait_for()
    with page.expect_download() as dl:
        page.get_by_role("button", name="Chrome trace (Perfetto)").click()
    path = ARTIFACTS / "trace.json"
    dl.value.save_as(str(path))
    trace = json.loads(path.read_text())
    assert any(e.get("ph") == "X" for e in trace["traceEvents"])
    assert_clean(page, "06-runs")

    page.locator('[data-testid="stSidebar"]').get_by_text("Presentation mode").click()
    wait_idle(page)
    goto(page, "Place")
    page.wait_for_timeout(800)
    assert_clean(page, "07-place-presentation")


def test_large_graph_views(browser_page, app_url):
    page = browser_page
    page.goto(f"{app_url}/graphs")
    page.locator("h1", has_text="Graphs").wait_for()
    wait_idle(page)

    start = time.perf_counter()
    choose(page, "Example graph", "random DAG, 2,000 ops")
    page.get_by_text("Aggregated view: 2000 ops").wait_for(timeout=GUARD_MS)
    aggregated_2k = graph_canvas_ms(page, start, "Aggregated view: 2000 ops")
    assert_clean(page, "08-graphs-2000-aggregated")

    start = time.perf_counter()
    page.get_by_text("Show every op").click()
    page.get_by_text("All 2000 ops").wait_for(timeout=GUARD_MS)
    full_2k = graph_canvas_ms(page, start, "All 2000 ops")
    assert_clean(page, "09-graphs-2000-all-ops")

    page.get_by_text("Generator spec").first.click()
    wait_idle(page)
    box = page.get_by_test_id("stTextInputField")
    box.fill("gen:random?ops=20000&seed=1")
    start = time.perf_counter()
    box.press("Enter")
    page.get_by_text("Aggregated view: 20000 ops").wait_for(timeout=GUARD_MS)
    aggregated_20k = graph_canvas_ms(page, start, "Aggregated view: 20000 ops")
    assert_clean(page, "10-graphs-20000-aggregated")

    print(f"\ngraph view, 2,000 ops aggregated: {aggregated_2k:.0f} ms; 2,000 ops every op: {full_2k:.0f} ms; "
          f"20,000 ops aggregated: {aggregated_20k:.0f} ms (load + summary + layout + browser draw)")
    assert max(aggregated_2k, full_2k, aggregated_20k) < GUARD_MS


def fill(page, label: str, value: str) -> None:
    """Type ``value`` into the text or number input labelled ``label`` and commit it (Enter)."""
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")
    wait_idle(page)


def test_train_in_the_background(browser_page, app_url):
    """Start a short Placeto training from the Train page; the page polls it until its curve is complete."""
    page = browser_page
    page.goto(f"{app_url}/train")
    page.locator("h1", has_text="Train").wait_for()
    page.get_by_text("No training runs yet").wait_for(timeout=GUARD_MS)
    fill(page, "Graphs", "gen:random?ops=200&seed=1")
    fill(page, "groups", "16")
    fill(page, "batch", "4")
    fill(page, "episodes", "300")
    fill(page, "run name (optional)", "e2e placeto")
    start = time.perf_counter()
    page.get_by_role("button", name="Start training").click()
    page.get_by_text("Started training e2e placeto").wait_for(timeout=GUARD_MS)
    # no reload from here on: the page re-reads the store every 2 s while the run trains
    page.get_by_text(re.compile(r"^running · \d+ / 300 episodes")).wait_for(timeout=3 * GUARD_MS)
    card = page.locator('[data-testid="stVerticalBlock"]', has_text="e2e placeto").filter(
        has=page.locator('[data-testid="stPlotlyChart"]')).last  # the innermost block: the run's card
    card.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for(timeout=GUARD_MS)
    screenshot(page, "11-train-running")
    page.get_by_text("done · 300 / 300 episodes").wait_for(timeout=3 * GUARD_MS)
    seconds = time.perf_counter() - start
    assert card.locator(".scatterlayer .trace").count() >= 4  # sampled and best, per episode and per placement
    assert_clean(page, "12-train-done")

    goto(page, "Compare")
    page.get_by_text("Learning curves").first.wait_for()
    page.wait_for_timeout(1000)
    assert_clean(page, "13-compare-learning-curves")
    print(f"\ntraining 300 episodes from the Train page, click to a complete curve: {seconds:.1f} s")
