"""Figure images (PNG, SVG, PDF) from one headless chromium kept open between exports.

kaleido's one-shot export (``fig.to_image``) starts a browser and loads plotly.js for every image: seconds
before the figure is drawn, and many more on a loaded machine (issue 58: a timeline's SVG unfinished after
4 minutes). Here the first export starts one browser (kaleido's :class:`kaleido.Kaleido`, MathJax off: no
figure of the app typesets LaTeX, and its loading from a CDN stalls a machine without network) and later
exports reuse it; exports wait for each other (one tab). A browser left unused for :data:`IDLE_S` seconds,
or one that failed or took longer than :data:`TIMEOUT_S`, is closed; the next export starts a fresh one.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any

__all__ = ["IDLE_S", "TIMEOUT_S", "render_image"]

#: Seconds an unused browser stays open.
IDLE_S = 300.0
#: Seconds one start or one image may take before the browser is given up.
TIMEOUT_S = 120.0


class _Browser:
    """The kept browser: an event loop on a daemon thread holding one open :class:`kaleido.Kaleido`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido: Any = None
        self._idle: threading.Timer | None = None

    def image(self, fig: dict, opts: dict[str, Any]) -> bytes:
        with self._lock:
            if self._idle is not None:
                self._idle.cancel()
            try:
                if self._kaleido is None:
                    self._start()
                return self._run(self._kaleido.calc_fig(fig, opts=opts))
            except BaseException:
                self._stop()
                raise
            finally:
                if self._kaleido is not None:
                    self._idle = threading.Timer(IDLE_S, self.close)
                    self._idle.daemon = True
                    self._idle.start()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _run(self, coroutine: Coroutine, loop: asyncio.AbstractEventLoop | None = None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, loop or self._loop)
        try:
            return future.result(TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise

    def _start(self) -> None:
        import kaleido

        loop = asyncio.new_event_loop()

        def serve() -> None:
            loop.run_forever()
            loop.close()

        threading.Thread(target=serve, name="figure-export", daemon=True).start()
        self._loop = loop

        async def opened() -> Any:
            browser = kaleido.Kaleido(n=1, timeout=TIMEOUT_S, mathjax=False)
            await browser.open()
            return browser

        self._kaleido = self._run(opened())

    def _stop(self) -> None:
        loop, browser = self._loop, self._kaleido
        self._loop = self._kaleido = None
        if loop is None:
            return
        if browser is not None:
            with contextlib.suppress(Exception):  # a browser that crashed or hangs: its process goes with the loop
                self._run(browser.close(), loop)
        loop.call_soon_threadsafe(loop.stop)


_BROWSER = _Browser()
atexit.register(_BROWSER.close)


def render_image(fig: dict, fmt: str, width: int, height: int, scale: float = 1.0) -> bytes:
    """``fig`` (a plotly figure as a dict) as ``fmt`` bytes at ``width`` × ``height`` px, drawn by the kept
    browser; raises what kaleido raises (the caller falls back or gives up)."""
    return _BROWSER.image(fig, {"format": fmt, "width": width, "height": height, "scale": scale})
