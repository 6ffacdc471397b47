"""Model-folder fixtures: real-looking config.json + header-only model.safetensors, a few KiB each.

The shapes are those of a Qwen3.5-27B-class target and its 5-layer DFlash draft
(target_layer_ids [1,16,31,46,61], fc 5×5120 = 25600 -> 5120), plus drafts that are wrong in the ways
the doctor must catch. The safetensors files carry a valid header (8-byte little-endian length, then
JSON) whose data_offsets are all [0, 0]: shapes are real, weights are absent, the files stay tiny.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

HIDDEN = 5120
TARGET_LAYERS = 64
VOCAB = 248320
MASK_TOKEN_ID = 248070
LAYER_IDS = [1, 16, 31, 46, 61]
BLOCK_SIZE = 16

FIXTURE_NAMES = (
    "target",
    "draft",
    "draft_fc_5120",
    "draft_layer_ids_out_of_range",
    "draft_block_size_8",
    "mtp_target",
)


def write_safetensors_header(path: Path, shapes: dict[str, list[int]], dtype: str = "BF16") -> None:
    """Write a safetensors file holding only the header (every tensor has data_offsets [0, 0])."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "specops_testbed": "header-only"}}
    for name, shape in shapes.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [0, 0]}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header with spaces to 8-byte alignment
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """Parse the header back (what a doctor does); used by the fixture tests."""
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        parsed: dict[str, Any] = json.loads(handle.read(length))
    return parsed


def _write_model(folder: Path, config: dict[str, Any], shapes: dict[str, list[int]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    write_safetensors_header(folder / "model.safetensors", shapes)
    return folder


def target_config() -> dict[str, Any]:
    """A multimodal Qwen3.5-style target: the text model's numbers live under text_config."""
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "torch_dtype": "bfloat16",
        "text_config": {
            "model_type": "qwen3_5_text",
            "hidden_size": HIDDEN,
            "num_hidden_layers": TARGET_LAYERS,
            "num_attention_heads": 24,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "intermediate_size": 17408,
            "vocab_size": VOCAB,
            "max_position_embeddings": 262144,
            "rms_norm_eps": 1e-06,
        },
        "vision_config": {"model_type": "qwen3_5_vision", "hidden_size": 1152, "depth": 27},
    }


def _target_shapes() -> dict[str, list[int]]:
    prefix = "model.language_model"
    shapes = {
        f"{prefix}.embed_tokens.weight": [VOCAB, HIDDEN],
        f"{prefix}.norm.weight": [HIDDEN],
        "lm_head.weight": [VOCAB, HIDDEN],
    }
    for layer in (0, TARGET_LAYERS - 1):
        shapes[f"{prefix}.layers.{layer}.mlp.down_proj.weight"] = [HIDDEN, 17408]
    return shapes


def draft_config(
    layer_ids: list[int] | None = None, block_size: int = BLOCK_SIZE, num_target_layers: int = TARGET_LAYERS
) -> dict[str, Any]:
    """A DFlash draft config as z-lab publishes them (block size both nested and top-level)."""
    ids = LAYER_IDS if layer_ids is None else layer_ids
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "torch_dtype": "bfloat16",
        "hidden_size": HIDDEN,
        "num_hidden_layers": len(ids),
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 17408,
        "vocab_size": VOCAB,
        "max_position_embeddings": 40960,
        "rms_norm_eps": 1e-06,
        "num_target_layers": num_target_layers,
        "block_size": block_size,
        "dflash_config": {
            "target_layer_ids": ids,
            "block_size": block_size,
            "mask_token_id": MASK_TOKEN_ID,
            "num_target_layers": num_target_layers,
        },
    }


def _draft_shapes(fc_in: int, layers: int) -> dict[str, list[int]]:
    shapes = {"fc.weight": [HIDDEN, fc_in], "hidden_norm.weight": [HIDDEN], "norm.weight": [HIDDEN]}
    for layer in range(layers):
        shapes[f"layers.{layer}.self_attn.q_proj.weight"] = [4096, HIDDEN]
        shapes[f"layers.{layer}.self_attn.k_proj.weight"] = [1024, HIDDEN]
    return shapes


def _mtp_target() -> tuple[dict[str, Any], dict[str, list[int]]]:
    """A text-only target with one built-in MTP layer (NEXTN profile; no torchcodec at start-up)."""
    config = {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "torch_dtype": "bfloat16",
        "hidden_size": 2048,
        "num_hidden_layers": 48,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "max_position_embeddings": 262144,
        "mtp_num_hidden_layers": 1,
    }
    shapes = {
        "model.embed_tokens.weight": [151936, 2048],
        "lm_head.weight": [151936, 2048],
        "mtp.fc.weight": [2048, 4096],
        "mtp.norm.weight": [2048],
    }
    return config, shapes


def write_model_fixtures(root: Path) -> dict[str, Path]:
    """Create every fixture folder under root; return {name: folder} (names in FIXTURE_NAMES)."""
    width = len(LAYER_IDS) * HIDDEN
    out_of_range = [1, 20, 39, 58, 77]  # trained on an 80-layer target; 77 >= 64
    mtp_config, mtp_shapes = _mtp_target()
    specs: dict[str, tuple[dict[str, Any], dict[str, list[int]]]] = {
        "target": (target_config(), _target_shapes()),
        "draft": (draft_config(), _draft_shapes(width, 5)),
        "draft_fc_5120": (draft_config(), _draft_shapes(HIDDEN, 5)),
        "draft_layer_ids_out_of_range": (draft_config(out_of_range, num_target_layers=80), _draft_shapes(width, 5)),
        "draft_block_size_8": (draft_config(block_size=8), _draft_shapes(width, 5)),
        "mtp_target": (mtp_config, mtp_shapes),
    }
    return {name: _write_model(root / name, config, shapes) for name, (config, shapes) in specs.items()}
