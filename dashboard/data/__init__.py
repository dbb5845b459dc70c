"""The app's data helpers: reading runs, building tables, checking input, the view in a link.

No module here imports streamlit (``tests/dashboard/test_layout.py`` checks it): they are plain
functions of runs, graphs and dicts, tested without AppTest. What they cache is cached with
:func:`functools.lru_cache`, per process as ``st.cache_resource`` would.
"""
