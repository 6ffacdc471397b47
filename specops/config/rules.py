"""SGLang's own start-up rules for speculative decoding, checked in a second instead of after a model load.

Each rule mirrors an assertion or ValueError in SGLang's server-args handling (see docs/profiles.md): a
mistake here would otherwise surface only after a ten-minute model load, or worse, be silently "fixed" by
SGLang (topk = 1 forces num_draft_tokens = num_steps + 1). Rules are pure: a profile and a host in,
violations out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specops.config.inventory import HostSpec
from specops.config.profile import Profile

MANAGED_FLAGS = frozenset(
    {
        "--model-path", "--model", "--served-model-name", "--host", "--port", "--tp-size", "--tp",
        "--dp-size", "--dp", "--pp-size", "--page-size", "--enable-dp-attention", "--mem-fraction-static",
        "--context-length", "--max-running-requests", "--enable-metrics", "--trust-remote-code",
        "--speculative-algorithm", "--speculative-draft-model-path", "--speculative-draft-model",
        "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens",
        "--speculative-dflash-block-size", "--speculative-draft-window-size",
        "--speculative-draft-attention-backend", "--speculative-ddtree-budget",
        "--speculative-use-rejection-sampling", "--attention-backend", "--speculative-dflash-draft-window-size",
        "--api-key", "--nnodes", "--node-rank", "--dist-init-addr",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (a profile field or a host field) and why."""

    scope: Literal["profile", "host"]
    path: str
    message: str
    related: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        """Every field involved, the main one first (an override of any of them is to blame)."""
        return (self.path, *self.related)


def check_profile_for_host(profile: Profile, host: HostSpec) -> list[Violation]:
    """All violations of SGLang's rules for this profile launched on this host."""
    violations = _extra_args(host) + _gpu_count(host)
    if profile.is_eagle_family:
        violations += _eagle_rules(profile)
    if profile.is_dflash_family:
        violations += _dflash_rules(profile, host)
    if profile.algorithm == "DDTREE":
        violations += _ddtree_rules(profile)
    violations += _family_only_fields(profile)
    if profile.needs_draft_model and profile.draft_for(host.draft_model_path) is None and not profile.is_dflash_family:
        message = (
            f"profile {profile.name!r} needs its own draft model: set draft_model_path in "
            f"[hosts.{host.name}.overrides.{profile.name}] (the host's draft_model_path is the DFlash draft, "
            f"used only by DFLASH/DDTREE)"
        )
        violations.append(Violation("profile", "draft_model_path", message))
    return violations


def _extra_args(host: HostSpec) -> list[Violation]:
    found = []
    for index, arg in enumerate(host.extra_args):
        managed = managed_flag_for(arg.split("=", 1)[0])
        if managed is not None:
            found.append(Violation("host", f"extra_args.{index}", managed))
    return found


def _gpu_count(host: HostSpec) -> list[Violation]:
    """SGLang puts one tensor-parallel rank on each visible GPU: more ranks than GPUs cannot start."""
    if host.gpus is None or host.tp_size <= len(host.gpus.split(",")):
        return []
    count = len(host.gpus.split(","))
    message = f"tp_size {host.tp_size} needs {host.tp_size} GPUs, but gpus lists {count} ({host.gpus})"
    return [Violation("host", "tp_size", message, related=("gpus",))]


def managed_flag_for(flag: str) -> str | None:
    """Why `flag` may not be passed by hand, or None. SGLang's parser takes any unambiguous prefix of a long
    option (`--hos 0.0.0.0` is `--host`), so a prefix of a managed flag is as dangerous as the flag itself."""
    if flag in MANAGED_FLAGS:
        return f"{flag} is set by specops from the host and profile settings; set it there instead"
    if len(flag) > 2 and flag.startswith("--"):
        owners = sorted(name for name in MANAGED_FLAGS if name.startswith(flag))
        if owners:
            return (
                f"{flag} is an abbreviation SGLang would read as {owners[0]}, which specops sets from the host "
                "and profile settings; set it there instead"
            )
    return None


def _eagle_rules(profile: Profile) -> list[Violation]:
    spec = profile.speculative
    triple = {"num_steps": spec.num_steps, "eagle_topk": spec.eagle_topk, "num_draft_tokens": spec.num_draft_tokens}
    missing = [name for name, value in triple.items() if value is None]
    found: list[Violation] = []
    if missing and len(missing) < 3:
        found.append(
            Violation(
                "profile",
                "speculative",
                "num_steps, eagle_topk and num_draft_tokens must be set together or not at all "
                f"(SGLang asserts this); missing: {', '.join(missing)}",
            )
        )
    elif spec.eagle_topk == 1 and spec.num_steps is not None and spec.num_draft_tokens != spec.num_steps + 1:
        found.append(
            Violation(
                "profile",
                "speculative.num_draft_tokens",
                f"with eagle_topk = 1 SGLang forces num_draft_tokens to num_steps + 1 = {spec.num_steps + 1}; "
                f"got {spec.num_draft_tokens}",
                related=("speculative.num_steps", "speculative.eagle_topk"),
            )
        )
    if spec.use_rejection_sampling and spec.eagle_topk not in (None, 1):
        found.append(
            Violation("profile", "speculative.use_rejection_sampling", "rejection sampling needs eagle_topk = 1")
        )
    return found


def _dflash_rules(profile: Profile, host: HostSpec) -> list[Violation]:
    spec, server, algo = profile.speculative, profile.server, profile.algorithm
    found: list[Violation] = []
    if profile.draft_for(host.draft_model_path) is None:
        found.append(Violation("host", "draft_model_path", f"{algo} needs a draft model (profile {profile.name!r})"))
    block = spec.dflash_block_size
    if block is not None and spec.num_draft_tokens is not None and block != spec.num_draft_tokens:
        found.append(
            Violation(
                "profile",
                "speculative.num_draft_tokens",
                f"{algo} needs dflash_block_size = num_draft_tokens; got {block} and {spec.num_draft_tokens}",
                related=("speculative.dflash_block_size",),
            )
        )
    block = block or spec.num_draft_tokens
    if spec.draft_window_size is not None and block is not None and spec.draft_window_size < block:
        found.append(
            Violation(
                "profile",
                "speculative.draft_window_size",
                f"{algo} needs draft_window_size >= block size {block}; got {spec.draft_window_size}",
                related=("speculative.dflash_block_size", "speculative.num_draft_tokens"),
            )
        )
    for field in ("num_steps", "eagle_topk"):
        value = getattr(spec, field)
        if value not in (None, 1):
            found.append(
                Violation("profile", f"speculative.{field}", f"{algo} forces {field} to 1; got {value} (remove it)")
            )
    if server.enable_dp_attention:
        found.append(Violation("profile", "server.enable_dp_attention", f"{algo} does not support DP attention"))
    if server.pp_size != 1:
        found.append(Violation("profile", "server.pp_size", f"{algo} needs pp_size = 1; got {server.pp_size}"))
    return found


def _ddtree_rules(profile: Profile) -> list[Violation]:
    found: list[Violation] = []
    if profile.server.page_size not in (None, 1):
        found.append(
            Violation("profile", "server.page_size", f"DDTREE needs page_size = 1; got {profile.server.page_size}")
        )
    if profile.speculative.use_rejection_sampling:
        found.append(
            Violation("profile", "speculative.use_rejection_sampling", "DDTREE does not support rejection sampling")
        )
    found += _ddtree_budget(profile)
    return found


def _ddtree_budget(profile: Profile) -> list[Violation]:
    """The DDTree code (PR #29907): budget <= block - 1 verifies one chain ("spine mode"); a larger budget
    builds a real tree ("full-tree mode"), which only the triton attention backend supports (ValueError)."""
    spec, server = profile.speculative, profile.server
    block = spec.dflash_block_size or spec.num_draft_tokens
    if spec.num_draft_tokens not in (None, block):
        return []  # the block-size mismatch is reported by itself
    if spec.ddtree_budget is None or block is None or spec.ddtree_budget <= block - 1:
        return []
    if server.attention_backend == "triton":
        return []
    got = server.attention_backend or "not set (SGLang picks flashinfer/fa3)"
    message = (
        f"ddtree_budget {spec.ddtree_budget} > block size - 1 = {block - 1} is DDTREE's full-tree mode, which needs "
        f'server.attention_backend = "triton"; attention_backend is {got}'
    )
    return [
        Violation(
            "profile",
            "speculative.ddtree_budget",
            message,
            related=("server.attention_backend", "speculative.dflash_block_size", "speculative.num_draft_tokens"),
        )
    ]


def _family_only_fields(profile: Profile) -> list[Violation]:
    """Flags that belong to another algorithm are an error: SGLang would ignore or reject them."""
    spec = profile.speculative
    owners = {"dflash_block_size": "DFLASH and DDTREE", "draft_window_size": "DFLASH and DDTREE"}
    found = []
    if not profile.is_dflash_family:
        for field, owner in owners.items():
            if getattr(spec, field) is not None:
                found.append(_foreign_field(profile, field, owner))
    if profile.algorithm != "DDTREE" and spec.ddtree_budget is not None:
        found.append(_foreign_field(profile, "ddtree_budget", "DDTREE"))
    return found


def _foreign_field(profile: Profile, field: str, owner: str) -> Violation:
    return Violation(
        "profile", f"speculative.{field}", f"{field} is only for {owner}; {profile.algorithm} does not use it"
    )
