"""Run the real CLI entry point in-process and capture what a user would see."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from specops.cli.main import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """`specops ARGS...` as the console script runs it; returns exit code, stdout, stderr."""
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return CliResult(code=code, out=captured.out, err=captured.err)
