"""Signatures of speculative decoding that does not fit: draft/target shape mismatches and bad configuration,
in any algorithm (EAGLE, EAGLE3, STANDALONE, NEXTN, DFLASH, DDTREE).

Why separate: these are the failures a code change or a profile change causes (a patch to spec_info.py, a draft
for another target), so `diagnose` ties them to the release's diff rather than to the host.
"""

from __future__ import annotations

from specops.engine.signatures.model import Signature, sig

_ALGORITHMS = r"EAGLE3?|STANDALONE|NEXTN|DFLASH|DDTREE|speculative|draft"

SPEC_SIGNATURES: tuple[Signature, ...] = (
    sig(
        "dflash-layers-capture",
        "fatal",
        r"does not implement set_dflash_layers_to_capture",
        "the target model class cannot capture the hidden layers a DFLASH/DDTREE draft needs",
        "use a target architecture this build supports for DFLASH/DDTREE, or a build that adds it",
        family="speculative",
    ),
    sig(
        "dflash-feature-mismatch",
        "error",
        r"DFLASH target_hidden feature dim mismatch",
        "the draft gets the wrong hidden-state width: this build does not treat the algorithm as DFLASH-family "
        "(an unpatched DDTREE build), so drafts are useless and output degenerates",
        "deploy the build with the DDTREE patch (is_dflash() must be true for DDTREE): "
        "`specops deploy HOST --profile ddtree --build ./sglang/python --patch ddtree.patch`",
        family="speculative",
    ),
    sig(
        "spec-shape-mismatch",
        "fatal",
        r"Sizes of tensors must match except in dimension|must match the existing size .* at non-singleton dimension"
        r"|mat1 and mat2 shapes cannot be multiplied",
        "a draft tensor does not fit the target's: the draft was built for another hidden size or another "
        "speculative setting",
        "check that draft_model_path belongs to model_path (same hidden size/vocabulary), and the speculative "
        "num_steps/topk/num_draft_tokens this algorithm supports; a code change under speculative/ can cause it",
        family="speculative",
        spec_frames_only=True,
    ),
    sig(
        "spec-config",
        "fatal",
        rf"(?:AssertionError|ValueError): .*(?:{_ALGORITHMS}|speculative_\w+)"
        r"|validation errors? for SpeculativeConfig",
        "the speculative-decoding settings are rejected at start-up",
        "fix the profile's speculative section as the message says (algorithm, draft path, num_steps, eagle_topk, "
        "num_draft_tokens)",
        family="speculative",
    ),
    sig(
        "draft-load-failed",
        "fatal",
        r"KeyError: '(?P<weight>midlayer\.[\w.]+)'",
        "the draft checkpoint's weights do not fit the model class loading them: an EAGLE3 draft (its layer is "
        "`midlayer`) loaded as an ordinary model, or a draft format this build cannot read",
        "check speculative.algorithm is EAGLE3 for an EAGLE3 draft, and that draft_model_path's config.json names "
        "an Eagle3 architecture this build has (e.g. LlamaForCausalLMEagle3); drafts from other trainers may "
        "need converting",
        family="speculative",
    ),
    sig(
        "draft-layers-differ",
        "warning",
        r"DFLASH draft num_target_layers=\S+ differs",
        "the draft was trained on a target with another layer count",
        "check draft_model_path matches model_path",
        family="speculative",
    ),
)
