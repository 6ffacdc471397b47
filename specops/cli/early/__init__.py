"""The console script's start-up path: what a plain `doctor` or `deploy` starts before typer loads.

start.py is the console script's fast path; command_line.py reads the command line with the grammar generated
from the typer app (grammar_table.py, by grammar.py); doctor.py and deploy.py start the connections that the
parsed command then takes over (or closes); plan.py keeps the plan the last identical run validated, and
checks.py holds its values to specops.toml's rules. Importing this package itself loads nothing.
"""
