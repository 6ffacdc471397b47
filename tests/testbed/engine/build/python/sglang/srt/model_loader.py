"""Reads the target/draft checkpoints (config.json + safetensors header) and wires the draft.

The decisive step is SGLang's: for DFLASH-family algorithms the target captures aux hidden states
only when the build's own `SpeculativeAlgorithm.is_dflash()` says so. If it does not, the draft's
`fc` receives the bare hidden state and SGLang's "feature dim mismatch" shows up; the engine then
falls back to the useless-draft behaviour seen in the field (`!!!!!!!!`, accept length 1.0).
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
from typing import Any

import torch

from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
from sglang.srt.testengine_log import log

DFLASH_ACCEPT_LENGTH = 3.2
EAGLE_ACCEPT_LENGTH = 2.5


@dataclasses.dataclass
class LoadedModel:
    """What the fake forward pass needs: the architecture, the context and how good the draft is."""

    architecture: str
    context_length: int
    is_multimodal: bool
    draft_useful: bool
    accept_length: float | None


def read_config(model_path: str) -> dict[str, Any]:
    with open(os.path.join(model_path, "config.json"), encoding="utf-8") as handle:
        config: dict[str, Any] = json.load(handle)
    return config


def read_safetensors_shapes(model_path: str) -> dict[str, list[int]]:
    """Tensor shapes from `model.safetensors`: 8-byte little-endian header length, then JSON."""
    with open(os.path.join(model_path, "model.safetensors"), "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    return {name: list(meta["shape"]) for name, meta in header.items() if name != "__metadata__"}


def load_model(args: ServerArgs) -> LoadedModel:
    """Load the target (and draft); raise like SGLang on configs a real server would refuse."""
    target = read_config(args.model_path)
    architecture = str((target.get("architectures") or ["UnknownForCausalLM"])[0])
    context = args.context_length or int(str(target.get("max_position_embeddings", 4096)))
    algo = SpeculativeAlgorithm.from_string(args.speculative_algorithm)
    model = LoadedModel(architecture, context, architecture.endswith("ForConditionalGeneration"), True, None)
    if algo.is_none():
        return model
    if algo in (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.DDTREE):
        model.draft_useful = _wire_dflash_draft(algo, target, str(args.speculative_draft_model_path))
        model.accept_length = DFLASH_ACCEPT_LENGTH if model.draft_useful else 1.0
    else:
        model.accept_length = EAGLE_ACCEPT_LENGTH
    override = os.environ.get("SGLANG_TESTENGINE_ACCEPT_LENGTH")
    if override and model.draft_useful:
        model.accept_length = float(override)
    return model


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    nested = config.get("text_config")
    return nested if isinstance(nested, dict) else config


def _wire_dflash_draft(algo: SpeculativeAlgorithm, target: dict[str, Any], draft_path: str) -> bool:
    """Return whether the draft's fc gets the feature width it was trained on."""
    draft = read_config(draft_path)
    dflash = draft.get("dflash_config") or {}
    assert isinstance(dflash, dict)
    layer_ids = [int(i) for i in dflash.get("target_layer_ids") or draft.get("target_layer_ids") or []]
    text = _text_config(target)
    target_layers = int(str(text["num_hidden_layers"]))
    hidden = int(str(text["hidden_size"]))
    _check_layer_ids(layer_ids, target_layers, draft)
    if algo.is_dflash():
        log(f"DFLASH aux hidden state capture enabled: layers_to_capture={[i + 1 for i in layer_ids]}")
        captured = len(layer_ids) * hidden
    else:
        captured = hidden
    fc_in = read_safetensors_shapes(draft_path)["fc.weight"][1]
    target_hidden = torch.empty((7, captured), dtype=torch.float32)
    if int(target_hidden.shape[-1]) == fc_in:
        return True
    log(
        "DFLASH target_hidden feature dim mismatch. "
        f"Expected shape [N, {fc_in}] (num_context_features={len(layer_ids)}, hidden_size={hidden}), "
        f"but got shape={tuple(target_hidden.shape)}. This usually means the target model is capturing a "
        "different number of layer features than the draft checkpoint/config expects."
    )
    return False


def _check_layer_ids(layer_ids: list[int], target_layers: int, draft: dict[str, Any]) -> None:
    for layer_id in layer_ids:
        if not 0 <= layer_id < target_layers:
            raise ValueError(
                f"DFLASH target_layer_ids contains {layer_id}, which is out of range for a target "
                f"with num_hidden_layers={target_layers}."
            )
    dflash = draft.get("dflash_config") or {}
    assert isinstance(dflash, dict)
    trained_on = dflash.get("num_target_layers") or draft.get("num_target_layers")
    if trained_on is not None and int(str(trained_on)) != target_layers:
        log(
            f"WARNING: DFLASH draft num_target_layers={trained_on} differs from the target's "
            f"num_hidden_layers={target_layers}."
        )
