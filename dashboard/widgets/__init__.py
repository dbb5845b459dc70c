"""Streamlit widgets and views that pages share: figures with their exports, the graph picker, the graph
explorer, schedules, measured runs, the Place / Train / Compare sections, the view in the link.

Data helpers without streamlit are in :mod:`dashboard.data`; every session-state key is in
:mod:`dashboard.state`.
"""
