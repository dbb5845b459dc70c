"""The property tests' two profiles (issue 54): ``ci``, the default, and ``fuzz``, for ``make fuzz``.

``ci`` draws the same examples on every run (``derandomize``: the seed is taken from the test's own code, no
example database), so one commit passes or fails the same way on every machine and every day; ``fuzz``
(``HYPOTHESIS_PROFILE=fuzz``, ``make fuzz``) draws new random examples, ``FUZZ_FACTOR`` times as many, and keeps
what fails in ``.hypothesis/`` so a rerun replays it. A failure ``make fuzz`` finds becomes an explicit
``@example`` (or, for a test that draws with ``st.data()``, a named regression test) beside the property.

Both profiles make every property test blind to the clock: no deadline, no too-slow health check — a busy
machine is slow, not wrong. The profile is applied to every collected property test, its own ``@settings``
included (:func:`apply_profile`), so a test cannot opt out by naming ``derandomize`` or ``suppress_health_check``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: ``make fuzz`` draws this many times the examples a test asks for.
FUZZ_FACTOR = 10
PROFILES = ("ci", "fuzz")
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in PROFILES:
    raise SystemExit(f"HYPOTHESIS_PROFILE must be one of {', '.join(PROFILES)}, got {PROFILE!r}")

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", derandomize=False, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """How many examples a property test that asks for ``n`` draws under the active profile."""
    return n * FUZZ_FACTOR if PROFILE == "fuzz" else n


def profile_settings(current: settings) -> settings:
    """``current`` (a test's own settings) with the active profile's determinism and clock rules on top."""
    suppressed = sorted(set(current.suppress_health_check) | {HealthCheck.too_slow}, key=lambda h: h.value)
    if PROFILE == "fuzz":
        return settings(current, max_examples=examples(current.max_examples), derandomize=False,
                        database=settings.get_profile("fuzz").database, deadline=None,
                        suppress_health_check=suppressed)
    return settings(current, derandomize=True, database=None, deadline=None, suppress_health_check=suppressed)


def apply_profile(test) -> None:
    """Put :func:`profile_settings` on a collected ``@given`` test (once: parametrized items share it)."""
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if current is None or getattr(test, "_placelab_profile_applied", False):
        return
    test._hypothesis_internal_use_settings = profile_settings(current)
    test._placelab_profile_applied = True
