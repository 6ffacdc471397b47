"""Executors over a Host, one noun each: release (push session, switch, prune, manifest), unit, lock, guard,
audit, status. They run the argv that `specops.commands` builds."""
