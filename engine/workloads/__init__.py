"""Graph generators for the papers' workloads, one module per family; each registers with
:func:`engine.generators.register`. :func:`engine.generators.from_spec` imports them all on
first use.
"""
