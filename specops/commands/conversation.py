"""The argv of a command conversation: one exec on the host that runs every later command as a request
(the host side is specops/remote/runner.py, the client specops/host/conversation.py)."""

from __future__ import annotations

from specops.remote.bundle import runner_script

# How long the conversation's exec may live (the host's `timeout` ends it then): longer than any deploy,
# whose own steps each carry their own, shorter, limit.
CONVERSATION_TIMEOUT_S = 12 * 3600.0


def conversation_argv(python: str) -> list[str]:
    """The host's configured interpreter runs the stdlib runner, isolated (-I) and without site (-S)."""
    return [python, "-IS", "-c", runner_script()]
