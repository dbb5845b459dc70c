"""The computation graph: :class:`~engine.graph.compgraph.CompGraph`, its DAG algorithms (``dag``), its
``placelab.graph/1`` files (``io``) and the registry of graph file formats (``formats``).

The layer above the leaves (errors, limits, jsonio) and below clusters, placements and the simulator.
"""
