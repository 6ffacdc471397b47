"""Injection properties of the rendered unit: no host or profile value adds a line, a section or a directive to
the systemd unit, and ExecStart= parses back (as systemd reads it) into exactly the launch argv.

The baseline is the same unit with a harmless value in the same place; a hostile value that the load accepts
must give the same skeleton (sections and directive names, in order).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from specops.commands.systemd import launch_argv, render_unit
from specops.config.inventory import HostSpec
from specops.config.loader import Target
from specops.config.profile import Profile
from specops.config.profile_store import load_profiles
from tests.unit.test_injection import BASE, HARMLESS, HOSTILE, PROPERTY, count

UNIT_FIELDS = ["python", "service", "base_dir", "listen", "model_path", "draft_model_path", "served_model_name",
               "cuda_home", "env", "extra_args"]  # fmt: skip


def _profile(env: dict[str, str] | None = None) -> Profile:
    loaded = load_profiles(Path("/nonexistent"), Path.cwd())[0]["ddtree"]
    if env is None:
        return loaded.profile
    return Profile.model_validate({**loaded.raw, "name": "ddtree", "env": env})


def _host_value(field: str, value: str) -> dict[str, Any]:
    if field == "env":
        return {"env": {"EXTRA_SETTING": value}}
    if field == "extra_args":
        return {"extra_args": ["--log-level", value]}
    return {field: value}


def _harmless(field: str) -> dict[str, Any]:
    return _host_value(field, HARMLESS.get(field, "info"))


def skeleton(unit: str) -> list[str]:
    """Sections and directive names in order; continuation lines belong to their directive."""
    shape, continued = [], False
    for line in unit.splitlines():
        if not continued and line.strip() and not line.startswith("#"):
            shape.append(line if line.startswith("[") else line.split("=", 1)[0])
        continued = line.endswith("\\")
    return shape


def exec_words(unit: str) -> list[str]:
    """ExecStart= as systemd splits it: continuations joined, quotes and escapes undone, `%%`/`$$` unescaped."""
    text = unit.replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    return [word.replace("%%", "%").replace("$$", "$") for word in shlex.split(line.removeprefix("ExecStart="))]


@PROPERTY
@given(field=st.sampled_from(UNIT_FIELDS), value=HOSTILE)
def test_a_host_value_adds_no_line_section_or_directive_to_the_unit(field: str, value: str) -> None:
    count("unit: host values add no directive")
    try:
        spec = HostSpec.model_validate({**BASE, **_host_value(field, value)})
    except ValidationError:
        return
    target = Target(spec, _profile())
    baseline = Target(HostSpec.model_validate({**BASE, **_harmless(field)}), _profile())
    unit = render_unit(target)
    assert skeleton(unit) == skeleton(render_unit(baseline))
    assert exec_words(unit) == launch_argv(target)


@PROPERTY
@given(value=HOSTILE)
def test_a_profile_env_value_adds_no_directive_to_the_unit(value: str) -> None:
    count("unit: profile values add no directive")
    try:
        profile = _profile({"PROFILE_SETTING": value})
    except ValidationError:
        return
    spec = HostSpec.model_validate(BASE)
    unit = render_unit(Target(spec, profile))
    assert skeleton(unit) == skeleton(render_unit(Target(spec, _profile({"PROFILE_SETTING": "1"}))))
