"""The console script: answer a shell-completion request before anything heavy loads, else run the CLI.

A completion call happens on every Tab press; importing typer alone costs more than the whole answer may,
so the request is answered from specops/cli/complete.py (tomllib and a table) and the app is never built.
A plain `specops doctor NAME...` connects to its hosts before typer loads, and the CLI loads while the hosts
run the probe (specops/cli/early.py).
"""

from __future__ import annotations

import os
import sys

COMPLETE_VAR = "_SPECOPS_COMPLETE"


def entry() -> None:
    if os.environ.get(COMPLETE_VAR):
        from specops.cli.complete import respond

        sys.exit(respond(os.environ))
    from specops.cli import early

    try:
        if early.start(sys.argv[1:]):
            early.wait_connected()
        from specops.cli.main import main

        code = main()
    except KeyboardInterrupt:  # only while connecting early: main() answers Ctrl-C itself
        from specops.errors import ExitCode

        code = int(ExitCode.INTERRUPTED)
    finally:
        early.discard()
    sys.exit(code)
