"""Model checks: the folders exist, and a DFlash draft fits its target.

A DFlash draft's `fc` projects the concatenated hidden states of several target layers:
input = len(target_layer_ids) × target hidden_size. A draft made for another target loads
fine and then fails on the first request with `DFLASH target_hidden feature dim mismatch`, so the shapes
are compared before deploying.
"""

from __future__ import annotations

from specops.doctor.checks._helpers import config_value, host_key
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import ModelFacts


def _model(ctx: CheckContext, role: str) -> ModelFacts | None:
    return next((model for model in ctx.facts.models if model.role == role), None)


@check("model.paths", "the target and draft model folders exist and are readable")
def model_paths(ctx: CheckContext) -> CheckResult:
    host = ctx.host
    if host is None:
        return skipped("model.paths", "no host config (--local): model paths come from the inventory")
    if ctx.profile and ctx.profile.needs_draft_model and host.draft_model_path is None:
        return failed(
            "model.paths",
            f"profile {ctx.profile.name} needs a draft model but {host_key(host, 'draft_model_path')} is not set",
            f"set {host_key(host, 'draft_model_path')} to the draft's folder on the host",
        )
    evidence, problems, warnings, checked = [], [], [], 0
    for role, ref, key in (
        ("target", host.model_path, "model_path"),
        ("draft", host.draft_model_path, "draft_model_path"),
    ):
        if ref is None:
            continue
        if not ref.startswith("/"):
            evidence.append(f"{role}: {ref} is a Hugging Face repo id: not checkable (downloaded at start)")
            continue
        model = _model(ctx, role)
        if model is None:
            evidence.append(f"{role}: {ref} was not probed")
            continue
        checked += 1
        if not model.exists:
            problems.append(f"{role} model {ref} does not exist ({host_key(host, key)})")
        elif not model.readable:
            problems.append(f"{role} model {ref} is not readable by the probe's user")
        elif model.error:
            warnings.append(f"{role} model {ref}: {model.error}")
        else:
            evidence.append(f"{role}: {ref} (architectures {config_value(model.config, 'architectures')})")
    if problems:
        return failed(
            "model.paths",
            problems[0],
            f"copy the model to the host or correct {host_key(host, 'model_path')} / draft_model_path",
            evidence + problems[1:] + warnings,
        )
    if warnings:
        return warned("model.paths", warnings[0], "check the folder holds config.json and *.safetensors", evidence)
    if checked == 0:
        return skipped("model.paths", "no local model folder to check (Hugging Face repo ids or not probed)")
    return passed("model.paths", "target and draft folders exist and are readable" if checked > 1 else
                  "the model folder exists and is readable", evidence)  # fmt: skip


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _fc_shape(draft: ModelFacts) -> list[int] | None:
    for name, shape in draft.tensors.items():
        if name == "fc.weight" or name.endswith(".fc.weight"):
            return shape
    return None


@check("model.draft_target_dims", "a DFlash draft's fc input = len(target_layer_ids) × target hidden_size")
def draft_target_dims(ctx: CheckContext) -> CheckResult:
    profile = ctx.profile
    if profile is None or not profile.is_dflash_family:
        return skipped("model.draft_target_dims", "only for DFLASH/DDTREE profiles")
    target, draft = _model(ctx, "target"), _model(ctx, "draft")
    if target is None or draft is None or not (target.exists and draft.exists):
        return skipped("model.draft_target_dims", "target or draft folder not probed (see model.paths)")
    hidden = _int(config_value(target.config, "hidden_size"))
    target_layers = _int(config_value(target.config, "num_hidden_layers"))
    draft_hidden = _int(config_value(draft.config, "hidden_size"))
    raw_ids = config_value(draft.config, "target_layer_ids")
    layer_ids = [value for value in raw_ids if isinstance(value, int)] if isinstance(raw_ids, list) else []
    block = _int(config_value(draft.config, "block_size"))
    fc = _fc_shape(draft)
    evidence = [
        f"target: hidden_size {hidden}, num_hidden_layers {target_layers}",
        f"draft: hidden_size {draft_hidden}, target_layer_ids {layer_ids or None}, block_size {block}",
        f"draft fc.weight: {fc}",
    ]
    problems: list[tuple[str, str]] = []
    if fc is not None and hidden and layer_ids and len(fc) == 2 and fc[1] != len(layer_ids) * hidden:
        problems.append((
            f"draft fc.weight is {fc}: expected input {len(layer_ids) * hidden} = "
            f"{len(layer_ids)} target layers × hidden {hidden}",
            "the draft was trained for another target model: use the DFlash draft made for this target "
            f"({host_key(ctx.host, 'draft_model_path')})",
        ))  # fmt: skip
    if draft_hidden and hidden and draft_hidden != hidden:
        problems.append((
            f"draft hidden_size {draft_hidden} ≠ target hidden_size {hidden}",
            f"use the DFlash draft made for this target ({host_key(ctx.host, 'draft_model_path')})",
        ))  # fmt: skip
    if target_layers and layer_ids and max(layer_ids) >= target_layers:
        problems.append((
            f"draft target_layer_ids {layer_ids} reach layer {max(layer_ids)} "
            f"but the target has {target_layers} layers",
            "the draft was trained for a deeper target: use the draft made for this target",
        ))  # fmt: skip
    wanted = profile.speculative.dflash_block_size
    if block and wanted and block != wanted:
        problems.append((
            f"draft block_size {block} ≠ profile {profile.name} dflash_block_size {wanted}",
            f"set speculative.dflash_block_size = {block} (and num_draft_tokens = {block}) in the profile "
            f"or in {host_key(ctx.host, f'overrides.{profile.name}')}",
        ))  # fmt: skip
    if problems:
        return failed(
            "model.draft_target_dims", problems[0][0], problems[0][1], evidence + [p for p, _ in problems[1:]]
        )
    if fc is None or not hidden or not layer_ids:
        return skipped("model.draft_target_dims", "draft fc.weight, target hidden_size or target_layer_ids not found")
    return passed(
        "model.draft_target_dims",
        f"draft fc.weight {fc} = {len(layer_ids)} target layers × hidden {hidden}",
        evidence,
    )
