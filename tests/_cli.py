"""The command line called in-process, as the CLI tests call it."""

from __future__ import annotations

from typing import Any

from sediment.cli.main import main


def cli(capsys: Any, *args: Any) -> tuple[int, str, str]:
    """Run ``sediment ARGS``: its exit code (argparse's SystemExit included), stdout and stderr."""
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
        code = 0 if exc.code is None else int(exc.code)
    out, err = capsys.readouterr()
    return code, out, err
