"""Adversarial pass (issue #34's acceptance: "a new adversarial pass of the same size finds >= 99 % clean").

About 780 hostile cases against the command line, the run store, Ray and the app, in the classes of
issue #34 and beyond: every count, budget, repeat, seed, size and parameter with huge, negative, zero,
NaN, infinite, non-numeric, 2^31 and 2^63 values; malformed and edge-case files of every graph format;
special files (directories, symlink loops, named pipes, ``/dev/zero`` behind a link, sparse files of
gigabytes); run store, checkpoint and policy corruption; a full disk; resume on a changed graph; racing
deletes; ``--json`` cleanliness of every command that has it; output paths; terminal escapes; unknown
names; commands without a subcommand; the app's graph box, uploads, sidebar, Place form and links; and
issue #54's third pass (``pass3``).

This script is the entry point; the pass is the package ``benchmarks/adversarial/``: the cases as data,
one module per group of classes (``cases_*.py``), and one runner (``runner.py``: running, judging — the
rules of a clean case are in its docstring — reporting, and these options). Each case runs ``placelab
...`` in a child process in a fresh temporary folder with a timeout (``--timeout``, 60 s; a hang is a
failure) and is clean when it works (exit 0, strict JSON under ``--json``, only placelab's notes on
stderr) or is refused in one ``error: ...`` line (exit 2), as the case expects, and passes its own check.

Usage::

    .venv/bin/python benchmarks/adversarial_pass.py --quick           # about 1 case in 8 (each class)
    nice -n 10 .venv/bin/python benchmarks/adversarial_pass.py        # the whole pass (about an hour on 2 cores)
    .venv/bin/python benchmarks/adversarial_pass.py --classes store,checkpoint --keep /tmp/adv-fail
    .venv/bin/python benchmarks/adversarial_pass.py --match 'noise' --list   # the cases, not run
    .venv/bin/python benchmarks/adversarial_pass.py --json > pass.json   # one JSON object on stdout
"""

from adversarial.runner import main

if __name__ == "__main__":
    main(description=__doc__.splitlines()[0])
