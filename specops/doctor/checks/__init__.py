"""Importing this package registers every check (order here = order in the output)."""

from specops.doctor.checks import (  # noqa: F401
    system,
)
