"""Free localhost ports for the servers tests start (a Streamlit app, a Ray cluster's components)."""

import socket

_GIVEN: set[int] = set()  # ports handed out in this process, so no two servers get the same one


def free_port() -> int:
    """A port free now and not handed out before: the OS may return a port it just released again, and
    ``ray start`` refuses two components on one port (seen: the GCS and the dashboard both on 36211)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port
