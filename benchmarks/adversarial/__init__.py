"""The adversarial pass (issue #34's acceptance, grown by issues #54 and after): hostile cases against the
``placelab`` command line, the run store, Ray and the app, each run in a child process in a fresh temporary
folder, judged clean or not, and counted per class. ``benchmarks/adversarial_pass.py`` runs it.

The package, the cases kept as data apart from the one runner:

* :mod:`.fixtures`: what a case is (:class:`~.fixtures.Case`), the files every case folder holds, shared
  inputs (graphs, clusters, placements, malicious pickles) and checks, and the runs built once per pass;
* :mod:`.runner`: running a case's processes, judging them (the rules of a clean case), the report and the
  command-line options; its ``CLASSES`` names every class, in order;
* ``cases_*.py``: the cases, one small generator function per class, grouped by theme: ``cases_limits``
  (limits, exhaustion, seeds, nonsense), ``cases_store`` (store, checkpoint), ``cases_runs`` (disk, resume,
  ray, race), ``cases_output`` (one-line, outputs, escapes, json), ``cases_files`` (formats, clusters,
  placements, paths), ``cases_cli`` (names, usage), ``cases_app`` (app, and the worker that plays an app
  case) and ``cases_pass3`` (pass3: issue #54's third pass).

A new case is one more ``Case(...)`` yielded by its class's function; a new class, one more function and its
line in ``runner.CLASSES``.
"""

import sys
from pathlib import Path

#: The repository; on the path with the fuzz harness (tests/fuzz: valid files of every format) and
#: benchmarks/ (fuzz_soak's kill -9 round), so that every module here imports them at its top.
ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, ROOT / "tests" / "fuzz", ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
