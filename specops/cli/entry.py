"""The console script: answer a shell-completion request before anything heavy loads, else run the CLI.

A completion call happens on every Tab press; importing typer alone costs more than the whole answer may,
so the request is answered from specops/cli/complete.py (tomllib and a table) and the app is never built; a bare
`specops --help` prints the screen typer rendered the last time (specops/cli/help_cache.py).
Anything else runs through the start-up path (specops/cli/early/start.py): a plain `doctor` or `deploy`
connects before typer loads, and a doctor, a deploy and a rollback leave without tearing down every module.
"""

from __future__ import annotations

import os
import sys

COMPLETE_VAR = "_SPECOPS_COMPLETE"


def entry() -> None:
    if os.environ.get(COMPLETE_VAR):
        from specops.cli.complete import respond

        sys.exit(respond(os.environ))
    if sys.argv[1:] == ["--help"]:  # the screen typer rendered last time, when nothing it depends on changed
        from specops.cli.help_cache import print_help

        sys.exit(print_help())
    from specops.cli.early.start import run

    run(sys.argv[1:])
