"""The model fixtures parse like real checkpoints and carry the shapes the doctor reasons about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.testbed.models import FIXTURE_NAMES, read_safetensors_header

pytestmark = pytest.mark.testbed  # the test bed's own test: outside the fast suite (pytest -m 'not testbed')


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def test_every_fixture_has_config_and_parsable_tiny_safetensors(models: dict[str, Path]) -> None:
    assert sorted(models) == sorted(FIXTURE_NAMES)
    for folder in models.values():
        raw = (folder / "model.safetensors").read_bytes()
        header_length = int.from_bytes(raw[:8], "little")
        assert len(raw) == 8 + header_length, "header-only file: no bytes after the header"
        assert header_length % 8 == 0
        assert len(raw) < 16_384
        assert read_safetensors_header(folder / "model.safetensors")["__metadata__"]["format"] == "pt"
        assert _config(folder)["architectures"]


def test_target_is_a_64_layer_5120_multimodal_model(models: dict[str, Path]) -> None:
    config = _config(models["target"])
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert config["text_config"]["num_hidden_layers"] == 64
    assert config["text_config"]["hidden_size"] == 5120


def test_draft_fc_takes_five_target_layers(models: dict[str, Path]) -> None:
    config = _config(models["draft"])
    header = read_safetensors_header(models["draft"] / "model.safetensors")
    assert config["architectures"] == ["DFlashDraftModel"]
    assert config["num_hidden_layers"] == 5
    assert config["dflash_config"]["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert config["dflash_config"]["block_size"] == 16 == config["block_size"]
    assert header["fc.weight"]["shape"] == [5120, 25600]
    assert header["fc.weight"]["dtype"] == "BF16"


def test_broken_drafts_are_broken_in_exactly_one_way(models: dict[str, Path]) -> None:
    fc = read_safetensors_header(models["draft_fc_5120"] / "model.safetensors")["fc.weight"]["shape"]
    assert fc == [5120, 5120]
    ids = _config(models["draft_layer_ids_out_of_range"])["dflash_config"]["target_layer_ids"]
    assert max(ids) >= 64
    block = _config(models["draft_block_size_8"])
    assert block["dflash_config"]["block_size"] == 8 == block["block_size"]
    assert block["dflash_config"]["target_layer_ids"] == [1, 16, 31, 46, 61]


def test_mtp_target_is_text_only(models: dict[str, Path]) -> None:
    config = _config(models["mtp_target"])
    assert config["architectures"][0].endswith("ForCausalLM")
    assert config["mtp_num_hidden_layers"] == 1
