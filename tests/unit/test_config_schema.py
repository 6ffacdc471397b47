"""`specops config schema`: the JSON Schema an editor uses accepts what specops accepts and flags typos."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.unit.clirun import run_cli

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def _schema(capsys: pytest.CaptureFixture[str], kind: str) -> dict[str, Any]:
    result = run_cli(capsys, "config", "schema", kind)
    assert result.code == 0, result.err
    schema: dict[str, Any] = json.loads(result.out)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _errors(schema: dict[str, Any], document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_the_init_starter_file_validates_and_a_typo_is_rejected(
    capsys: pytest.CaptureFixture[str], config_dir: Path
) -> None:
    schema = _schema(capsys, "config")
    assert run_cli(capsys, "init").code == 0
    text = (config_dir / "specops.toml").read_text(encoding="utf-8")
    assert _errors(schema, tomllib.loads(text)) == []
    typo = tomllib.loads(text.replace("tp_size = 2", "tp_sise = 2", 1))
    assert _errors(schema, typo) == ["hosts.llm-one: Additional properties are not allowed ('tp_sise' was unexpected)"]


def test_host_fields_carry_descriptions_defaults_and_limits(capsys: pytest.CaptureFixture[str]) -> None:
    host = _schema(capsys, "config")["$defs"]["Host"]
    port = host["properties"]["port"]
    assert (port["type"], port["default"], port["minimum"], port["maximum"]) == ("integer", 30000, 1, 65535)
    assert port["description"] == "engine HTTP port (--port)"
    assert host["required"] == ["ssh"]
    assert "name" not in host["properties"]


def test_every_shipped_profile_validates_and_an_unknown_algorithm_is_rejected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = _schema(capsys, "profile")
    assert "DDTREE" in schema["properties"]["algorithm"]["enum"]
    for path in sorted(PROFILES.glob("*.toml")):
        assert _errors(schema, tomllib.loads(path.read_text(encoding="utf-8"))) == [], path.name
    assert _errors(schema, {"algorithm": "DDTRE"})[0].startswith("algorithm: 'DDTRE' is not one of ['NEXTN'")
    assert _errors(schema, {"algorithm": "NEXTN", "smoke": {"min_tokens_per_sec": 3}}) == [
        "smoke: Additional properties are not allowed ('min_tokens_per_sec' was unexpected)"
    ]


def test_host_overrides_are_checked_as_partial_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    schema = _schema(capsys, "config")
    host = {"ssh": "llm-two", "overrides": {"ddtree": {"smoke": {"min_tokens_per_s": 60.0}}}}
    assert _errors(schema, {"hosts": {"llm-two": host}}) == []
    host["overrides"]["ddtree"]["smoke"] = {"min_tokens_per_s": "fast"}
    assert _errors(schema, {"hosts": {"llm-two": host}}) == [
        "hosts.llm-two.overrides.ddtree.smoke.min_tokens_per_s: 'fast' is not of type 'number'"
    ]


def test_schema_can_be_written_to_a_file(capsys: pytest.CaptureFixture[str], config_dir: Path) -> None:
    result = run_cli(capsys, "config", "schema", "--output", "specops.schema.json")
    assert (result.code, result.out) == (0, "wrote specops.schema.json\n")
    assert json.loads((config_dir / "specops.schema.json").read_text())["title"] == "specops.toml"


def test_a_host_or_the_defaults_may_name_the_build_and_its_patches(capsys: pytest.CaptureFixture[str]) -> None:
    schema = _schema(capsys, "config")
    build = {"build": "~/src/sglang/python", "patches": ["patches/ddtree.patch"]}
    assert _errors(schema, {"defaults": build, "hosts": {"llm-two": {"ssh": "llm-two", **build}}}) == []
    assert _errors(schema, {"hosts": {"llm-two": {"ssh": "llm-two", "patches": "ddtree.patch"}}}) == [
        "hosts.llm-two.patches: 'ddtree.patch' is not of type 'array'"
    ]
    assert "relative to specops.toml's folder" in schema["$defs"]["Host"]["properties"]["build"]["description"]
