"""`python -m specops` is the same as the `specops` command."""

from specops.cli.entry import entry

entry()
