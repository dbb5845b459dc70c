"""Stored runs as files to take away: the app's figures of runs (what ``placelab plot`` writes) and a report of
runs as a slide deck (PPTX) or one self-contained HTML page (``placelab report``, the *Report* buttons).

No Streamlit: the command line and the pages call the same functions.
"""
