"""*Open in Perfetto*: hand a run's Chrome trace to the user's own Perfetto UI (issue #17, item 5).

Perfetto's documented way to open a trace from another page ("Deep linking to Perfetto UI",
perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui): the page opens the UI in a new
window, sends it ``'PING'`` until it answers ``'PONG'``, then posts ``{perfetto: {buffer, title,
fileName}}`` with the trace as an ``ArrayBuffer``. The button runs in the browser (a Streamlit
Custom Components v2 component, inline JS): the window must be opened by the click itself, or the
browser blocks it. The app downloads nothing: the user's browser opens the UI at
``PLACELAB_PERFETTO_URL`` (default ``https://ui.perfetto.dev``; a self-hosted UI works the same).
Traces above :data:`MAX_TRACE_BYTES` are not handed over (the page would carry them on every
rerun); the download button beside it always works.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import streamlit as st

__all__ = ["DEFAULT_URL", "MAX_TRACE_BYTES", "open_in_perfetto", "perfetto_url"]

DEFAULT_URL = "https://ui.perfetto.dev"
MAX_TRACE_BYTES = 16 * 2**20

_HERE = Path(__file__).resolve().parent
_COMPONENT = st.components.v2.component(
    "placelab.open_in_perfetto",
    js=(_HERE / "perfetto.js").read_text(encoding="utf-8"),
    css=(_HERE / "perfetto.css").read_text(encoding="utf-8"),
)


def perfetto_url() -> str | None:
    """The Perfetto UI to open (``PLACELAB_PERFETTO_URL``), or None when it is no http(s) URL."""
    url = os.environ.get("PLACELAB_PERFETTO_URL", "").strip() or DEFAULT_URL
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


def open_in_perfetto(trace: bytes, *, title: str, file_name: str, key: str) -> None:
    """The *Open in Perfetto* button for ``trace`` (Chrome Trace Event JSON), or a caption saying why not."""
    url = perfetto_url()
    if url is None:
        st.caption("Open in Perfetto: PLACELAB_PERFETTO_URL is no http(s) URL; download the trace instead.")
        return
    if len(trace) > MAX_TRACE_BYTES:
        st.caption(f"Open in Perfetto: this trace is {len(trace) / 2**20:.0f} MB, more than the "
                   f"{MAX_TRACE_BYTES // 2**20} MB the page hands over; download it and open it in Perfetto.")
        return
    _COMPONENT(key=key, data={"url": url, "origin": "{0.scheme}://{0.netloc}".format(urlsplit(url)),
                              "trace": trace.decode("utf-8"), "title": title, "file_name": file_name})
