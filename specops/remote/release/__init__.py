"""The host-side release script: list, push session, receive, switch, prune, rollback, guard."""
