"""The profile model: one speculative-decoding recipe (NEXTN, DFLASH, DDTREE, ...) as data.

A profile says which `--speculative-algorithm` to launch and with which flags, the environment the engine
needs, how long a start may take, and what a healthy server must show in the smoke gate. Profiles ship in
`profiles/*.toml`; an operator can add their own next to specops.toml and a host can override fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from specops.config.fields import EnvName, ModelRef, Name, PlainText

Algorithm = Literal["NEXTN", "EAGLE", "EAGLE3", "DFLASH", "DDTREE", "STANDALONE", "NGRAM"]
EAGLE_FAMILY = frozenset({"NEXTN", "EAGLE", "EAGLE3"})
DFLASH_FAMILY = frozenset({"DFLASH", "DDTREE"})
AttentionBackend = Literal["flashinfer", "fa3", "fa4", "triton", "trtllm_mha", "ascend"]


class _Strict(BaseModel):
    """TOML has real types: a boolean or a float where a count belongs is a mistake, never a value to coerce."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Speculative(_Strict):
    """The `--speculative-*` flags; None means "not passed, SGLang decides"."""

    num_steps: int | None = Field(default=None, ge=1, description="--speculative-num-steps (EAGLE family)")
    eagle_topk: int | None = Field(default=None, ge=1, description="--speculative-eagle-topk (EAGLE family)")
    num_draft_tokens: int | None = Field(default=None, ge=1, description="--speculative-num-draft-tokens")
    dflash_block_size: int | None = Field(
        default=None, ge=1, description="--speculative-dflash-block-size (DFLASH/DDTREE; = num_draft_tokens)"
    )
    draft_window_size: int | None = Field(
        default=None, ge=1, description="--speculative-draft-window-size (DFLASH/DDTREE; >= block size)"
    )
    draft_attention_backend: AttentionBackend | None = Field(
        default=None, description="--speculative-draft-attention-backend"
    )
    ddtree_budget: int | None = Field(
        default=None, ge=1, description="--speculative-ddtree-budget: tree nodes besides the root (DDTREE)"
    )
    use_rejection_sampling: bool = Field(
        default=False, description="--speculative-use-rejection-sampling (EAGLE family, topk 1)"
    )


class Server(_Strict):
    """Server flags that the speculative rules depend on, plus common tuning knobs."""

    page_size: int | None = Field(default=None, ge=1, description="--page-size (DDTREE needs 1; passed as 1)")
    dp_size: int = Field(default=1, ge=1, description="--dp-size")
    pp_size: int = Field(default=1, ge=1, description="--pp-size (DFLASH/DDTREE need 1)")
    enable_dp_attention: bool = Field(default=False, description="--enable-dp-attention (not with DFLASH/DDTREE)")
    attention_backend: AttentionBackend | None = Field(
        default=None, description="--attention-backend (DDTREE with ddtree_budget > block size - 1 needs triton)"
    )
    mem_fraction_static: float | None = Field(default=None, gt=0, lt=1, description="--mem-fraction-static")
    context_length: int | None = Field(default=None, ge=1, description="--context-length")
    max_running_requests: int | None = Field(default=None, ge=1, description="--max-running-requests")
    enable_metrics: bool = Field(default=True, description="--enable-metrics (/metrics for the gates)")
    trust_remote_code: bool = Field(default=False, description="--trust-remote-code")


class Readiness(_Strict):
    """How long the engine may take to come up, and how systemd restarts it."""

    timeout_s: int = Field(default=900, ge=10, le=86400, description="TimeoutStartSec= and the readiness deadline")
    stop_timeout_s: int = Field(default=120, ge=1, le=3600, description="TimeoutStopSec=")
    restart_s: int = Field(default=10, ge=0, le=3600, description="RestartSec=")
    start_limit_burst: int = Field(default=3, ge=1, le=100, description="StartLimitBurst=")
    start_limit_interval_s: int = Field(default=1800, ge=1, le=86400, description="StartLimitIntervalSec=")
    watch_s: int = Field(
        default=300, ge=0, le=86400, description='after "verified", the guard watches this long (0: no watch)'
    )
    watch_timeout_s: int = Field(
        default=30, ge=1, le=600, description="watch: a /health_generate probe without an answer by then fails"
    )
    watch_failures: int = Field(
        default=3, ge=1, le=100, description="watch: this many failed probes in a row roll the release back"
    )


DEFAULT_SAMPLED_PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a refrigerator keeps food cold, for a curious ten-year-old.",
    "List five practical tips for learning a new language, with one sentence each.",
    "Describe the water cycle and why it matters for farming.",
)


class Drain(_Strict):
    """How a deliberate restart (deploy, rollback) lets running requests finish before the engine stops."""

    timeout_s: int = Field(
        default=60, ge=0, le=3600,
        description="the drain budget: after SIGTERM, wait up to this long for running requests to finish "
        "(sglang:num_running_reqs reaching 0) before the engine is killed; 0: kill at once. "
        "TimeoutStopSec= is at least this plus 30 s",
    )  # fmt: skip


class Smoke(_Strict):
    """What a healthy server must show: real generation, fast enough, with drafts accepted."""

    prompt: PlainText = Field(
        default="Explain in three sentences why the sky is blue.", description="prompt sent at temperature 0"
    )
    max_new_tokens: int = Field(default=256, ge=1, le=8192, description="tokens to generate (ignore_eos)")
    min_tokens_per_s: float = Field(default=20.0, ge=0, le=100000, description="gate: completion tokens / e2e latency")
    min_accept_length: float = Field(default=1.5, ge=1.0, le=64, description="gate: meta_info.spec_accept_length")
    max_regression_pct: float = Field(
        default=25.0,
        ge=0,
        le=100,
        description="gate: allowed drop of greedy tok/s and accept length vs the last verified release "
        "of this profile (sampled tok/s: a warning)",
    )
    sampled_requests: int = Field(
        default=4,
        ge=0,
        le=64,
        description="concurrent streamed requests at the sampling settings below, besides "
        "the greedy one (0: greedy only)",
    )
    sampled_temperature: float = Field(
        default=0.7, gt=0, le=2, description="temperature of the sampled requests (> 0: what production sends)"
    )
    sampled_top_p: float = Field(default=0.95, gt=0, le=1, description="top_p of the sampled requests")
    sampled_max_new_tokens: int = Field(
        default=128, ge=1, le=8192, description="max_new_tokens of each sampled request (they may stop earlier)"
    )
    sampled_prompts: list[PlainText] = Field(
        default=list(DEFAULT_SAMPLED_PROMPTS),
        min_length=1,
        max_length=64,
        description="prompts of the sampled requests, used in turn",
    )
    max_ttft_regression_pct: float = Field(
        default=50.0,
        ge=0,
        le=1000,
        description="warning: allowed rise of the sampled requests' TTFT p50 and p99 vs the last "
        "verified release of this profile (a rise of 50 ms or less never counts)",
    )
    baseline_release: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
        description="a release id on the host (e.g. the same model without speculation) to report the speed-up against",
    )
    min_speedup: float | None = Field(
        default=None, gt=0, le=100, description="gate: tokens/s at least this many times the baseline release's"
    )


class Profile(_Strict):
    """A named recipe; `name` comes from the file name, never from its content."""

    name: Name
    description: PlainText = Field(default="", description="one line shown in listings")
    algorithm: Algorithm = Field(description="passed to --speculative-algorithm")
    needs_draft_model: bool = Field(default=False, description="a draft model must be set (see draft_model_path)")
    draft_model_path: ModelRef | None = Field(
        default=None,
        description="this profile's draft, usually per host in [hosts.NAME.overrides.PROFILE]; "
        "DFLASH/DDTREE default to the host's draft_model_path (the DFlash draft), other algorithms never use it",
    )
    speculative: Speculative = Field(default=Speculative(), description="[speculative] table")
    server: Server = Field(default=Server(), description="[server] table")
    env: dict[EnvName, PlainText] = Field(default={}, description="environment for the engine (host env wins)")
    readiness: Readiness = Field(default=Readiness(), description="[readiness] table")
    drain: Drain = Field(default=Drain(), description="[drain] table")
    smoke: Smoke = Field(default=Smoke(), description="[smoke] table")

    @property
    def is_dflash_family(self) -> bool:
        return self.algorithm in DFLASH_FAMILY

    @property
    def is_eagle_family(self) -> bool:
        return self.algorithm in EAGLE_FAMILY

    def draft_for(self, host_draft: str | None) -> str | None:
        """The draft this profile launches with: its own, else (DFLASH/DDTREE only) the host's DFlash draft.

        Why not the host's draft for every algorithm: a DFlash draft is no EAGLE/NEXTN draft, yet SGLang's
        validation accepts it there and the server starts with a useless draft (or fails to load it).
        """
        if self.draft_model_path is not None:
            return self.draft_model_path
        return host_draft if self.is_dflash_family else None

    @property
    def reported_algorithm(self) -> str:
        """What `/get_server_info` reports: SGLang rewrites NEXTN to EAGLE at start-up."""
        return "EAGLE" if self.algorithm == "NEXTN" else self.algorithm
