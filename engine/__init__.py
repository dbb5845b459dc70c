"""placelab's science core: graphs, clusters, placements, simulation, objectives and runs.

No UI and no placers live here, and importing it loads neither torch, tensorflow nor
streamlit (docs/reference/design.md): those load lazily in the modules that need them.
"""
