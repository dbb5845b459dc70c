"""Run the ``placelab`` command line in this process (shared by the CLI tests)."""

from placelab.cli import main


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """Exit code, stdout, stderr of ``placelab ARGS`` run in this process."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
    out, err = capsys.readouterr()
    return code, out, err
