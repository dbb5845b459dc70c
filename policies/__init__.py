"""Placers: heuristics, partitioners, list schedulers, search and learned policies (``rl/``).

The registry is :mod:`policies.registry` (every placer by name, built with
:func:`policies.registry.make_placer`); the protocol and a placer's card are in :mod:`policies.base`.
Importing this package imports nothing else.
"""
