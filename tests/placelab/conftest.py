"""Fixtures of the reproduction tests."""

from tests.placelab.tiny import tiny_reproduction  # noqa: F401
