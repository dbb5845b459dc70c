"""The run store (CONTRACTS §6): one directory per run, its ``run.json``, locks and tables, placement runs'
records, and the summaries of graphs and runs that the CLI and the app show.
"""
