"""[notify] in specops.toml: a webhook URL and/or a local command; the URL's credentials never shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.config.notify import Notify, shown_url
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST

TOKEN = "s3cr3t-t0ken-value"
HOOK = f"https://ops:{TOKEN}@hooks.example.net/services/T0/B0/{TOKEN}?token={TOKEN}"


def test_a_webhook_and_a_command_are_accepted_and_the_webhook_is_never_printed(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(f'[notify]\nwebhook = "{HOOK}"\ncommand = ["/usr/local/bin/page", "--team", "gpu"]\n'
                 + VALID_HOST)  # fmt: skip
    result = run_cli(capsys, "config", "check")
    assert result.code == 0, result.err
    assert TOKEN not in result.out + result.err
    notify = Notify.model_validate({"webhook": HOOK})
    assert TOKEN not in f"{notify} {notify!r} {notify.webhook} {notify.model_dump()}"
    assert notify.shown_url() == "https://***@hooks.example.net/***"
    assert notify.revealed_url() == HOOK  # what is posted, and written to the host's 0600 file


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.example.net/", "https://hooks.example.net"),
        ("http://127.0.0.1:8080/hook?key=abc", "http://127.0.0.1:8080/***"),
        ("https://user:pw@[::1]:9000", "https://***@[::1]:9000"),
    ],
)
def test_only_the_scheme_and_host_of_a_webhook_are_shown(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_a_bad_notify_table_is_refused_with_its_path_and_no_secret(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(f'[notify]\nwebhook = "ftp://ops:{TOKEN}@hooks.example.net/x"\ncommand = "page"\n'
                 f"retries = 9\n" + VALID_HOST)  # fmt: skip
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert "specops.toml: notify.webhook: expected an http:// or https:// URL" in result.err
    assert "specops.toml: notify.command:" in result.err and "specops.toml: notify.retries:" in result.err
    assert TOKEN not in result.out + result.err and "Traceback" not in result.err


def test_an_empty_notify_table_is_refused(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config("[notify]\n" + VALID_HOST)
    result = run_cli(capsys, "config", "check")
    assert result.code == 3 and "specops.toml: notify: set webhook, command or both" in result.err


def test_the_editor_schema_knows_the_notify_table(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "config", "schema")
    schema = json.loads(result.out)
    assert schema["properties"]["notify"] == {"$ref": "#/$defs/Notify"}
    assert set(schema["$defs"]["Notify"]["properties"]) == {"webhook", "command", "timeout_s", "retries"}
