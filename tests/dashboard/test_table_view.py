"""Every table the pages show (``dashboard.figures.tables.table_view``) and the LaTeX export print numbers the same
way: 4 significant digits, one precision down a column, plain notation, a dash or a column's word when missing
(issue #33: "2392.3057" beside "2", "1.6e+03" in LaTeX, "None" cells)."""

import math

import pandas as pd

from dashboard.data.place import UNKNOWN_SIZES, results_table
from dashboard.figures.tables import MISSING, table_latex, table_view


def shown(table: pd.DataFrame, missing=None) -> list[list[str]]:
    """The cells as the page shows them (the Styler's display text)."""
    ctx = table_view(table, missing)._translate(False, False)
    return [[str(cell["display_value"]) for cell in row[1:]] for row in ctx["body"]]


def test_numbers_to_four_significant_digits_with_one_precision_per_column():
    table = pd.DataFrame({"placer": ["single-device", "round-robin"], "makespan (ms)": [2392.3057, 1197.4353],
                          "ratio to lower bound": [2.0, 1.0011], "seconds to place": [0.000345, 1600.0],
                          "episodes": [300, 304], "OOM": [False, True]})
    assert shown(table) == [["single-device", "2392", "2.000", "0.0003450", "300", "no"],
                            ["round-robin", "1197", "1.001", "1600", "304", "yes"]]
    # the values stay numbers: sorting and the CSV download see them whole
    assert table_view(table).data["makespan (ms)"][0] == 2392.3057
    assert "1.6e+03" not in table_latex(table) and " 1600 " in table_latex(table)


def test_missing_values_are_a_dash_or_the_column_s_word():
    table = pd.DataFrame({"run": ["a", None], "start-up (s)": [None, 0.5], "peak memory (GB)": [math.nan, 5.8]})
    assert shown(table, {"peak memory (GB)": "unknown"}) == [["a", MISSING, "unknown"], [MISSING, "0.5000", "5.800"]]


def test_the_place_table_of_a_graph_without_sizes_reads_unknown():
    metrics = {"makespan_s": 0.002, "lower_bound_s": 0.001, "ratio_to_lower_bound": 2.0, "oom": False,
               "peak_memory_bytes": {"gpu:0": 0.0}, "communication_bytes": 0.0}
    row = {"placer": "single-device", "metrics": metrics, "seconds": 0.01, "run_id": None}
    unknown = results_table([row], memory_known=False)
    assert shown(unknown, UNKNOWN_SIZES)[0][6:9:2] == ["unknown", "unknown"]
    # the cell's value too: the browser's grid draws an empty cell as its placeholder, not as the Styler's text
    assert table_view(unknown, UNKNOWN_SIZES).data.iloc[0, 6:9:2].tolist() == ["unknown", "unknown"]
    known = results_table([row], memory_known=True)
    assert shown(known, UNKNOWN_SIZES)[0][6:9:2] == ["0.000", "0.000"]


def test_presentation_mode_shows_short_tables_as_plain_tables_at_the_large_font():
    """A data grid draws on a canvas at its own small size; in presentation mode a table of up to
    ``PRESENTATION_TABLE_ROWS`` rows is a plain table whose cells take the large font (the browser walk checks
    the size), a longer one stays a scrollable grid."""
    from streamlit.testing.v1 import AppTest

    script = ("import pandas as pd, streamlit as st\nfrom dashboard import state as keys\n"
              "from dashboard.widgets.ui import PRESENTATION_TABLE_ROWS, show_table\n"
              "st.session_state[keys.PRESENTATION] = st.session_state.get('on', False)\n"
              "show_table(pd.DataFrame({'makespan (ms)': [2392.3057, 1.5]}))\n"
              "show_table(pd.DataFrame({'x': [0.5] * (PRESENTATION_TABLE_ROWS + 1)}))\n")
    app = AppTest.from_string(script, default_timeout=300).run()
    assert (len(app.table), len(app.dataframe)) == (0, 2)
    app.session_state["on"] = True
    app.run()
    assert (len(app.table), len(app.dataframe)) == (1, 1)
    assert not app.exception
