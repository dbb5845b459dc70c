"""Graph importers, one module per format; each calls :func:`engine.graph.formats.register_format`.

:func:`engine.specs.load_graph` imports every module here on first use. An importer must
import without its heavy dependency (tensorflow, torch, onnx): load it inside its functions.
"""
