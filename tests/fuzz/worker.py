"""Fuzz worker: reads one JSON-quoted file path per line on stdin, runs ``placelab graph info
PATH --json`` in this process with file descriptors 1 and 2 captured, and answers one JSON line
``{"code", "out", "err"}`` on its original stdout. See ``harness.py``."""

from __future__ import annotations

import json
import os
import sys
import tempfile


def run_case(path: str) -> dict:
    from placelab.cli import main

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                main(["graph", "info", path, "--json"])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException as exc:  # main() must never let one through: report it as exit 1
                print(f"uncaught {type(exc).__name__}: {exc}", file=sys.stderr)
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return {"code": code, "out": out.read().decode("utf-8", "replace"),
                "err": err.read().decode("utf-8", "replace")}


def serve() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    for line in sys.stdin:
        answers.write(json.dumps(run_case(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
