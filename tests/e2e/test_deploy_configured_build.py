"""`specops deploy HOST --profile ddtree` as the README types it: the build and its patch named in specops.toml.

The DDTREE test engine serves its drafts only with the patch (tests/e2e/test_deploy.py: unpatched, the smoke
gate fails), so a verified deploy proves the configured patch was applied to the configured build."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene

pytestmark = pytest.mark.e2e


def test_the_build_and_patch_named_in_specops_toml_deploy_verified(scene: Scene) -> None:
    name = scene.host.name
    (scene.folder / "sglang-python").symlink_to(UNPATCHED)  # beside specops.toml: a relative path
    home = scene.folder / "home"
    shutil.copy(PATCH, home / "ddtree.patch")  # in the home folder: `~` expanded
    config = scene.folder / "specops.toml"
    header = f"[hosts.{name}]\n"
    configured = 'build = "sglang-python"\npatches = ["~/ddtree.patch"]\n'
    config.write_text(config.read_text().replace(header, header + configured))

    dry = scene.cli("deploy", name, "--profile", "ddtree", "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert f"build: {scene.folder / 'sglang-python'} (from specops.toml: hosts.{name}.build)\n" in dry.out
    assert f"patches: {home / 'ddtree.patch'} (from specops.toml: hosts.{name}.patches)\n" in dry.out

    result = scene.cli("deploy", name, "--profile", "ddtree", "--json")
    assert result.code == 0, result.out + result.err
    host = json.loads(result.out)["hosts"][name]
    assert host["outcome"] == "deployed"
    assert host["gates"]["smoke"]["figures"]["accept_length"] > 2
    manifest = json.loads(scene.host.read_file(f"/opt/specops/sglang/releases/{host['release']}/manifest.json"))
    assert (manifest["verified"], manifest["profile"]) == (True, "ddtree")
    assert [patch["name"] for patch in manifest["patches"]] == ["ddtree.patch"]
    assert manifest["source"]["path"] == str(UNPATCHED.resolve())
