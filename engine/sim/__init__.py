"""Simulation of a placed graph: the simulator (one compiled kernel per mode over shared pieces), its
:class:`~engine.sim.schedule.Schedule`, the objectives over it, Chrome traces, the plain reference
simulators the tests check it against, and the planners' estimator that follows the same rules.

The rules are ``docs/reference/simulation.md``; the entry point is :func:`engine.sim.simulator.simulate`.
"""
