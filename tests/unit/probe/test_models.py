"""Model folders: config.json fields and safetensors header shapes (never tensor data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.remote.probe.hoststate import inspect_model, read_safetensors_header
from tests.testbed.models import HIDDEN, LAYER_IDS, VOCAB, write_model_fixtures, write_safetensors_header


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_model_fixtures(tmp_path_factory.mktemp("models"))


def test_target_reads_text_config_and_embedding_shapes(fixtures: dict[str, Path]) -> None:
    facts = inspect_model("target", str(fixtures["target"]))
    assert facts["exists"] and facts["readable"] and facts["error"] is None
    assert facts["config"]["num_hidden_layers"] == 64 and facts["config"]["hidden_size"] == HIDDEN
    assert facts["config"]["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert facts["tensors"] == {
        "model.language_model.embed_tokens.weight": [VOCAB, HIDDEN],
        "lm_head.weight": [VOCAB, HIDDEN],
    }


def test_draft_reads_dflash_fields_and_fc(fixtures: dict[str, Path]) -> None:
    facts = inspect_model("draft", str(fixtures["draft"]))
    config = facts["config"]
    assert config["target_layer_ids"] == LAYER_IDS and config["block_size"] == 16 and config["num_target_layers"] == 64
    assert facts["tensors"] == {"fc.weight": [HIDDEN, len(LAYER_IDS) * HIDDEN]}


def test_wrong_drafts_show_their_flaw(fixtures: dict[str, Path]) -> None:
    assert inspect_model("draft", str(fixtures["draft_fc_5120"]))["tensors"]["fc.weight"] == [HIDDEN, HIDDEN]
    assert inspect_model("draft", str(fixtures["draft_block_size_8"]))["config"]["block_size"] == 8
    assert (
        max(inspect_model("draft", str(fixtures["draft_layer_ids_out_of_range"]))["config"]["target_layer_ids"]) == 77
    )


def test_sharded_model_reads_only_the_shards_it_needs(tmp_path: Path) -> None:
    folder = tmp_path / "sharded"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"hidden_size": 8, "num_hidden_layers": 2}))
    write_safetensors_header(folder / "model-00001-of-00002.safetensors", {"model.embed_tokens.weight": [100, 8]})
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"not read at all")
    index = {"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                            "model.layers.0.mlp.weight": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    facts = inspect_model("target", str(folder))
    assert facts["error"] is None and facts["tensors"] == {"model.embed_tokens.weight": [100, 8]}


def test_missing_folder_and_corrupt_header(tmp_path: Path) -> None:
    assert inspect_model("target", str(tmp_path / "absent"))["exists"] is False
    folder = tmp_path / "corrupt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes((10**12).to_bytes(8, "little") + b"{}")
    facts = inspect_model("draft", str(folder))
    assert facts["exists"] and "implausible" in facts["error"]
    with pytest.raises(ValueError, match="too short"):
        (folder / "short.safetensors").write_bytes(b"abc")
        read_safetensors_header(str(folder / "short.safetensors"))
