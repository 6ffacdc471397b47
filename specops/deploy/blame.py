"""Whom a deploy's failed gates point at: the build (its release is marked bad, never a rollback target again)
or something else (the release stays unmarked: marking it would keep a good build out of later rollbacks).

One decision, in one place: the automatic rollback asks it once, after the gates failed and before the
host-side rollback, which marks the release it leaves only when this says "build".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specops.commands.config_change import ConfigChange

Culprit = Literal["build", "configuration"]


@dataclass(frozen=True)
class Blame:
    """Who is to blame for the failed gates, and why, in words for the summary and the audit log."""

    culprit: Culprit
    reason: str

    @property
    def marks_bad(self) -> bool:
        return self.culprit == "build"


def blame_for_failed_gates(config: ConfigChange) -> Blame:
    """A deploy that changed the configuration (env file or unit) puts the evidence on that change, not on the
    build: the build is left unmarked, and the rollback puts back the configuration that served before. Else the
    build is blamed, as before."""
    if config.changed:
        return Blame("configuration", f"{config.summary()} in the same deploy: the build is not blamed")
    return Blame("build", "the gates failed with the configuration unchanged")
