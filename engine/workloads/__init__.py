"""Graph generators for the papers' workloads, one module per family, each generator marked with its card
(:func:`engine.workloads.card.generator`); :data:`engine.generators.GENERATORS` lists the modules. Also the
bundled published workloads (``published``: ``bench:`` specs) and their data.
"""
