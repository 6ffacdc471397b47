"""JSON Schema of specops.toml and of profile files, generated from the models that validate them.

Why generated: an editor (taplo / Even Better TOML, via a `#:schema` line) completes keys, shows each key's
description and default, and flags a typo as the operator types, and the schema can never disagree with
what `specops config check` accepts, because both come from the same pydantic models.

TOML has no null, so the `X or null` unions pydantic writes for optional fields become plain `X`.
"""

from __future__ import annotations

import copy
from typing import Any

from specops.config.engine_spec import EngineSpec
from specops.config.inventory import HostSpec
from specops.config.notify import Notify
from specops.config.profile import Profile

DRAFT = "https://json-schema.org/draft/2020-12/schema"
KINDS = ("config", "profile")


def _without_null(node: Any) -> Any:
    """Collapse `anyOf: [X, {type: null}]` into X, everywhere; drop `default: null` (there is no TOML null)."""
    if isinstance(node, list):
        return [_without_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _without_null(value) for key, value in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1:
            node.pop("anyOf")
            node = {**kept[0], **node}
    if node.get("default", 0) is None:
        node.pop("default")
    return node


def _profile_parts() -> tuple[dict[str, Any], dict[str, Any]]:
    """(the profile file's schema without its $defs, the $defs): `name` is the file name, not a key."""
    schema: dict[str, Any] = _without_null(Profile.model_json_schema())
    defs = schema.pop("$defs", {})
    schema["properties"].pop("name", None)
    schema["required"] = [key for key in schema.get("required", []) if key != "name"]
    return schema, defs


def profile_schema() -> dict[str, Any]:
    """The schema of a profile file (profiles/NAME.toml)."""
    schema, defs = _profile_parts()
    return {"$schema": DRAFT, "$id": "specops-profile.schema.json", **schema, "title": "specops profile",
            "$defs": defs}  # fmt: skip


def _host_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """(the host's schema, the models it refers to, such as Waiver: they go to the file's $defs)."""
    schema: dict[str, Any] = _without_null(HostSpec.model_json_schema())
    defs = schema.pop("$defs", {})
    schema["properties"].pop("name", None)
    schema["properties"]["overrides"]["additionalProperties"] = {"$ref": "#/$defs/ProfileOverride"}
    schema["required"] = ["ssh"]  # python and model_path may come from [defaults]
    schema["description"] = "One host; [defaults] fill in what it does not set."
    return schema, defs


def config_schema() -> dict[str, Any]:
    """The schema of specops.toml: hosts, groups, defaults, secrets_file; host overrides are partial profiles."""
    host, host_defs = _host_schema()
    defaults = copy.deepcopy(host)
    defaults["properties"].pop("ssh")
    defaults["required"] = []
    defaults["title"] = "Defaults"
    defaults["description"] = "Settings shared by every host; a host's own value wins."
    profile, defs = _profile_parts()
    override = {**copy.deepcopy(profile), "title": "ProfileOverride", "required": [],
                "description": "Profile fields this host changes for one profile (e.g. [smoke] gates)."}  # fmt: skip
    return {
        "$schema": DRAFT,
        "$id": "specops.schema.json",
        "title": "specops.toml",
        "description": "The hosts specops manages (see docs/configuration.md).",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "secrets_file": {"type": "string", "description": "file of NAME=value lines for the hosts' secrets"},
            "defaults": {"$ref": "#/$defs/Defaults"},
            "hosts": {"type": "object", "description": "[hosts.NAME] tables",
                      "additionalProperties": {"$ref": "#/$defs/Host"}},
            "groups": {"type": "object", "description": "group = [host and group names]",
                       "additionalProperties": {"type": "array", "items": {"type": "string"}}},
            "engines": {"type": "object", "description": "[engines.NAME] tables: one engine over several hosts",
                        "additionalProperties": {"$ref": "#/$defs/Engine"}},
            "notify": {"$ref": "#/$defs/Notify"},
        },
        "$defs": {**defs, **host_defs, "Host": host, "Defaults": defaults, "ProfileOverride": override,
                  "Engine": _engine_schema(),
                  "Notify": {**_without_null(Notify.model_json_schema()),
                             "description": "Where events go (see docs/notify.md)."}},
    }  # fmt: skip


def _engine_schema() -> dict[str, Any]:
    """[engines.NAME]: `name` is the table's name, not a key."""
    schema: dict[str, Any] = _without_null(EngineSpec.model_json_schema())
    schema["properties"].pop("name", None)
    schema["required"] = ["hosts"]
    return schema


def schema_for(kind: str) -> dict[str, Any]:
    return config_schema() if kind == "config" else profile_schema()
