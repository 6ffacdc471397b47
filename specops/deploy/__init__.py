"""Orchestration: the plan of a deploy, its execution on one host, rollback, and the fleet runner."""
