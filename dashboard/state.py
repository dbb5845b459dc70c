"""Every key the app keeps in ``st.session_state``, named once (issue #36, step 5).

Pages and widgets never spell a key: they use these constants, and functions for the keys made
per placer, per run or per view (a view is one place a shared widget is shown, e.g. ``place_0``).
A widget's key is a session-state key too (Streamlit keeps its value under it), so widget keys are
here as well. No streamlit import: this is a list of names.

Widgets whose choice should survive a visit to another page are *kept* (:func:`dashboard.context.keep`):
Streamlit drops the value of a widget not drawn in a run, so its value is copied under
:func:`kept_copy` (a plain key Streamlit never drops) and put back before the widget is drawn again.
"""

from __future__ import annotations

# -- the app's context: current graph and cluster (dashboard/context.py) --------------------------

GRAPH = "ctx_graph"  # the current graph (a CompGraph) of every page
GRAPH_LABEL = "ctx_graph_label"  # how the sidebar names where it came from
GRAPH_SPEC = "ctx_graph_spec"  # the spec it was loaded from (upload:NAME for an upload; None before one is kept)
UPLOAD_DIGEST = "ctx_upload_digest"  # sha256 of the last file uploaded on Graphs (parsed once)
CLUSTER = "ctx_cluster"  # widget: the sidebar's cluster preset
SIM_MODE = "ctx_sim_mode"  # widget: the sidebar's simulation mode
SIM_PROBLEM = "ctx_sim_problem"  # why the sidebar's simulation settings were refused (None: they apply)
KEPT = "ctx_kept_widgets"  # the set of kept widget keys
PRESENTATION = "presentation"  # widget: the sidebar's presentation-mode toggle


def sim_setting(name: str) -> str:
    """Widget: the sidebar's value of simulation setting ``name`` (a field of SimulationSettings)."""
    return f"ctx_sim_{name}"


def kept_copy(key: str) -> str:
    """The copy of kept widget ``key``'s value that survives pages where the widget is not drawn."""
    return f"ctx_kept:{key}"


# -- the view in the link (dashboard/widgets/link.py) -----------------------------------------------

LINK_READ = "link_read"  # True once this session read its link (the first run after a load or reload)
LINK_PENDING = "link_pending"  # the link's page parameters, until their page takes them
LINK_WARNINGS = "link_warnings"  # the link's refused parameters, one line each, shown once
LINK_PAGE = "link_page"  # the page's own parameters of the link, set during the run

# -- Home -----------------------------------------------------------------------------------------

HOME_PICTURE = "home_picture"  # the newest comparison's makespan bars (or the newest run's timeline)

# -- Graphs ---------------------------------------------------------------------------------------

GRAPHS_SOURCE = "graphs_source"  # widget, kept: Example / Generator spec / Upload a file
GRAPHS_EXAMPLE = "graphs_example"  # widget, kept: the example chosen
GRAPHS_SPEC = "graphs_spec"  # widget, kept: the generator spec typed
GRAPHS_UPLOAD = "graphs_upload"  # widget: the file uploader
GRAPHS_USE = "graphs_use"  # widget: Use / Reload this graph
GRAPHS_PROFILE = "graphs_profile"  # the parallelism-profile figure
GRAPHS_VIEW = "graphs_gv"  # view: the graph explorer of the current graph

# -- Place ----------------------------------------------------------------------------------------

PLACE_PLACERS = "place_placers"  # widget, kept: the placers chosen
PLACE_RUN = "place_run"  # widget: Run placers
PLACE_RESULTS = "place_results"  # the results in hand: {"graph", "cluster", "results": [dict, ...]}
PLACE_SAVED_MESSAGE = "place_saved_message"  # "Saved as run ...", shown once after the rerun
PLACE_TABLE = "place_table"  # the results table's downloads
PLACE_BARS = "place_bars"  # the makespan bars


def place_seed(placer: str) -> str:
    """Widget, kept: a placer's seed."""
    return f"place_seed_{placer}"


def place_budget(placer: str) -> str:
    """Widget, kept: a placer's budget (0: its default)."""
    return f"place_budget_{placer}"


def place_param(placer: str, name: str) -> str:
    """Widget, kept: a placer's parameter ``name``."""
    return f"place_param_{placer}_{name}"


def place_result(i: int, what: str) -> str:
    """Widgets of result ``i``: ``name`` (run name), ``save``, ``exec`` (Execute), ``exec_repeats`` and
    ``exec_step`` (kept), ``exec_view`` (the measured run's view)."""
    return f"place_{what}_{i}"


def place_view(i: int) -> str:
    """View: result ``i``'s schedule figures."""
    return f"place_{i}"


def place_explorer(i: int) -> str:
    """View: result ``i``'s graph explorer (linked to its timeline)."""
    return f"place_{i}_gv"


def place_whatif(i: int, what: str) -> str:
    """Widgets of result ``i``'s what-if editor: ``move``, ``find``, ``op``, ``scope``, ``lane``, ``window``, ``to``
    (kept), ``pick``, ``apply``, ``undo``, ``redo``, ``reset``, ``name``, ``save``; its timelines ``before`` and
    ``after`` (``after``: its selection) and the diff's downloads ``diff``."""
    return f"place_whatif_{what}_{i}"


# -- Compare --------------------------------------------------------------------------------------

COMPARE_MIX = "compare_mix"  # widget, kept: mix graphs / clusters
COMPARE_SETTING = "compare_setting"  # widget, kept: the (graph, cluster) group
COMPARE_RUNS = "compare_runs"  # widget, kept: the runs compared
COMPARE_TABLE = "compare_table"  # the comparison table's downloads
COMPARE_BARS = "compare_bars"  # the makespan bars
COMPARE_MEASURED_BARS = "compare_measured_bars"  # simulated vs measured bars
COMPARE_REPORT = "compare_report"  # the Report buttons (PPTX, HTML) of the runs compared
COMPARE_TL_SOURCE = "compare_tl_source"  # widget, kept: simulated / measured schedules
COMPARE_LEFT = "compare_left"  # widget, kept: the left timeline's run
COMPARE_RIGHT = "compare_right"  # widget, kept: the right timeline's run
COMPARE_DIFF = "compare_diff"  # the placement diff's downloads
COMPARE_DIFF_VIEW = "compare_diff_view"  # widget, kept: show the moved ops in the graph view
COMPARE_DIFF_EXPLORER = "compare_diff_gv"  # view: the explorer of the moved ops
COMPARE_SWEEP = "compare_sweep"  # widget, kept: the sweep shown
COMPARE_CDF_RUNS = "compare_cdf_runs"  # widget, kept: the runs in the CDF
COMPARE_CDF = "compare_cdf"  # the CDF figure
COMPARE_TRAIN_RUNS = "compare_train_runs"  # widget, kept: the training runs' curves shown
COMPARE_CURVES = "compare_curves"  # the learning-curves figure
COMPARE_HEALTH = "compare_health"  # the learning-health table
COMPARE = "compare"  # prefix of the Compare page's curve controls (curve_x, curve_smoothing)


def compare_timeline(side: str) -> str:
    """The timeline figure of side ``l`` or ``r``."""
    return f"compare_tl_{side}"


# -- Runs -----------------------------------------------------------------------------------------

RUNS_KIND = "runs_kind"  # widget, kept: the kind filter
RUNS_STATUS = "runs_status"  # widget, kept: the status filter
RUNS_TAG = "runs_tag"  # widget, kept: the tag filter
RUNS_TABLE = "runs_table"  # the runs table's downloads
RUNS_SELECTED = "runs_selected"  # widget, kept: the run shown
RUNS_KEEP_SELECTED = "runs_keep_selected"  # the run to select next: the same after a rename or tag edit, the
#                                            next in the list after a delete
RUNS_RENAME = "runs_rename"  # widget: Rename
RUNS_SAVE_TAGS = "runs_save_tags"  # widget: Save tags
RUNS_DELETE = "runs_delete"  # widget: Delete run
RUNS_TRACE = "runs_dl_trace"  # widget: the Chrome-trace download
RUNS_PERFETTO = "runs_perfetto"  # the Open-in-Perfetto component
RUNS_FIGURE = "runs_figure"  # widget, kept: the figure to export
RUNS_MEASURED = "runs_measured"  # view: the measured run


def runs_edit(what: str, run_id: str) -> str:
    """Widgets of the run edited: ``name``, ``tags``, ``confirm`` (the delete check box)."""
    return f"runs_{what}_{run_id}"


def runs_download(file: str) -> str:
    """Widget: the download of a run's ``file``."""
    return f"runs_dl_{file}"


def runs_figure_export(figure: str) -> str:
    """The export controls of the figure ``figure`` (its name, blanks as ``_``)."""
    return f"runs_fig_{figure.replace(' ', '_')}"


# -- Train ----------------------------------------------------------------------------------------

TRAIN_PLACER = "train_placer"  # widget, kept: the learned placer
TRAIN_CLUSTER_SHOWN = "train_cluster_shown"  # widget (disabled): the sidebar's cluster
TRAIN_GRAPHS = "train_graphs"  # widget, kept: the graph specs typed
TRAIN_GRAPHS_DEFAULT = "train_graphs_default"  # the graphs box's default (it follows the current graph)
TRAIN_SUGGESTION = "train_suggestion"  # widget: a suggested graph spec
TRAIN_EPISODES = "train_episodes"  # widget, kept
TRAIN_SEED = "train_seed"  # widget, kept
TRAIN_NAME = "train_name"  # widget, kept: the run name
TRAIN_WORKERS = "train_workers"  # widget, kept: rollout workers
TRAIN_START = "train_start"  # widget: Start training
TRAIN_SELECTED = "train_selected"  # widget: the runs shown as cards
TRAIN_SEEN = "train_seen"  # the run ids the page has listed (new ones join the cards)
TRAIN_OVERLAY = "train_overlay"  # the overlaid learning curves
TRAIN = "train"  # prefix of the Train page's curve controls (curve_x, curve_smoothing)


def train_param(placer: str, name: str) -> str:
    """Widget, kept: hyper-parameter ``name`` of learned placer ``placer``."""
    return f"train_{placer}_{name}"


def train_run(what: str, run_or_job: str) -> str:
    """Widgets of one training run or job: ``stop``, ``resume``, ``resume_eps``, ``health``,
    ``health_random``, ``curve``, ``dl`` (a run); ``cancel``, ``dismiss`` (a job)."""
    return f"train_{what}_{run_or_job}"


# -- Papers and Fidelity --------------------------------------------------------------------------

PAPERS_PICK = "papers_pick"  # widget, kept: the reproduction shown
PAPERS_NORM = "papers_norm"  # widget: judge by row-normalised ratios
PAPERS_CSV = "papers_csv"  # widget: the table as CSV
PAPERS_TEX = "papers_tex"  # widget: the table as LaTeX
PAPERS_RATIO = "papers_ratio"  # the ratio figure
PAPERS_RATIO_DOWNLOADS = "papers_ratio_dl"  # its one-click downloads
PAPERS_GRAPHS = "papers_graphs"  # the graphs the shown run used (ours or the authors' files)
PAPERS_REPORT = "papers_report"  # the Report buttons (PPTX, HTML) of the reproduction shown
FIDELITY_RUN = "fidelity_run"  # widget, kept: the validation run
FIDELITY_MODE = "fidelity_mode"  # widget, kept: the timeline's simulation mode
FIDELITY_SCATTER = "fidelity_scatter"  # the predicted-vs-measured figure
FIDELITY_TIMELINE = "fidelity_timeline"  # the measured-and-simulated timeline
FIDELITY_JOB = "fidelity_job"  # the id of the validation job started from the page (None: none in hand)
FIDELITY_MESSAGE = "fidelity_message"  # "Validation stored as run ...", shown once after the rerun
FIDELITY_PLACEMENTS = "fidelity_placements"  # widget, kept: placements of a new validation
FIDELITY_REPEATS = "fidelity_repeats"  # widget, kept: measured executions of each
FIDELITY_STEP = "fidelity_step"  # widget, kept: the step (ms) the graph is scaled to
FIDELITY_START = "fidelity_start"  # widget: the Start validation button


def papers_figure(i: int, downloads: bool = False) -> str:
    """The reproduction's figure ``i`` (``downloads``: its one-click downloads)."""
    return f"papers_fig_dl_{i}" if downloads else f"papers_fig_{i}"


def papers_beside(run_id: str) -> str:
    """Widget: another run of the same reproduction, shown beside run ``run_id`` on the Papers page."""
    return f"papers_beside_{run_id}"


# -- keys of shared widgets, made from their view's key -------------------------------------------


def part(key: str, name: str) -> str:
    """Widget ``name`` of the group of widgets ``key`` (a view or a figure): a figure's export popover
    (``x_title``, ``x_w``, ``x_h``, ``x_font``, ``x_fmt``, ``x_dl``, ``x_preview``), a table's downloads
    (``csv``, ``tex``), one-click figure downloads (``html``, ``png``, ``svg``), a report's buttons
    (``pptx``, ``html``), a graph explorer's ``color_by``, ``search``, ``reset``, ``pyvis`` and ``pyvis_dl``, a
    schedule's ``tl_find``, ``tl_arrows``, ``tl_plotly``, ``tl_reset``, ``trace``, ``load`` and ``memory``, a
    measured run's ``measured_tl`` and ``mvs``."""
    return f"{key}_{name}"


def curve(prefix: str, what: str) -> str:
    """Widget, kept: the learning curves' ``x`` axis or ``smoothing`` on the page of ``prefix``."""
    return f"{prefix}_curve_{what}"


def explorer_state(view: str) -> str:
    """The graph explorer of ``view``: open scopes, selected op, last event seen (dashboard/widgets/explorer.py)."""
    return f"{view}_explorer"


def explorer_event(view: str) -> str:
    """The last event of ``view``'s explorer component (a click on a node)."""
    return f"{view}_cy"


def timeline_selection(view: str) -> str:
    """The plotly timeline of ``view`` (its key as a chart): the points or box selected in it."""
    return f"{view}_timeline"


def timeline_window(view: str) -> str:
    """Widget: the time window (ms) of ``view``'s plotly timeline."""
    return f"{view}_tl_window"
