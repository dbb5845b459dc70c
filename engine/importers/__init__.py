"""Graph importers, one module per format; each calls :func:`engine.sources.register_format`.

:func:`engine.sources.load_graph` imports every module here on first use. An importer must
import without its heavy dependency (tensorflow, torch): load it inside its functions.
"""
