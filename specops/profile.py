"""The profile model: one speculative-decoding recipe (NEXTN, DFLASH, DDTREE, ...) as data.

A profile says which `--speculative-algorithm` to launch and with which flags, the environment the engine
needs, how long a start may take, and what a healthy server must show in the smoke gate. Profiles ship in
`profiles/*.toml`; an operator can add their own next to specops.toml and a host can override fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from specops.fields import EnvName, Name, PlainText

Algorithm = Literal["NEXTN", "EAGLE", "EAGLE3", "DFLASH", "DDTREE", "STANDALONE", "NGRAM"]
EAGLE_FAMILY = frozenset({"NEXTN", "EAGLE", "EAGLE3"})
DFLASH_FAMILY = frozenset({"DFLASH", "DDTREE"})
AttentionBackend = Literal["flashinfer", "fa3", "fa4", "triton", "trtllm_mha", "ascend"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Speculative(_Strict):
    """The `--speculative-*` flags; None means "not passed, SGLang decides"."""

    num_steps: int | None = Field(default=None, ge=1)
    eagle_topk: int | None = Field(default=None, ge=1)
    num_draft_tokens: int | None = Field(default=None, ge=1)
    dflash_block_size: int | None = Field(default=None, ge=1)
    draft_window_size: int | None = Field(default=None, ge=1)
    draft_attention_backend: AttentionBackend | None = None
    ddtree_budget: int | None = Field(default=None, ge=1)
    use_rejection_sampling: bool = False


class Server(_Strict):
    """Server flags that the speculative rules depend on, plus common tuning knobs."""

    page_size: int | None = Field(default=None, ge=1)
    dp_size: int = Field(default=1, ge=1)
    pp_size: int = Field(default=1, ge=1)
    enable_dp_attention: bool = False
    mem_fraction_static: float | None = Field(default=None, gt=0, lt=1)
    context_length: int | None = Field(default=None, ge=1)
    max_running_requests: int | None = Field(default=None, ge=1)
    enable_metrics: bool = True
    trust_remote_code: bool = False


class Readiness(_Strict):
    """How long the engine may take to come up, and how systemd restarts it."""

    timeout_s: int = Field(default=900, ge=10, description="TimeoutStartSec= and the readiness deadline")
    stop_timeout_s: int = Field(default=120, ge=1, description="TimeoutStopSec=")
    restart_s: int = Field(default=10, ge=0, description="RestartSec=")
    start_limit_burst: int = Field(default=3, ge=1, description="StartLimitBurst=")
    start_limit_interval_s: int = Field(default=1800, ge=1, description="StartLimitIntervalSec=")


class Smoke(_Strict):
    """What a healthy server must show: real generation, fast enough, with drafts accepted."""

    prompt: PlainText = "Explain in three sentences why the sky is blue."
    max_new_tokens: int = Field(default=256, ge=1, le=8192)
    min_tokens_per_s: float = Field(default=20.0, ge=0)
    min_accept_length: float = Field(default=1.5, ge=1.0)
    max_regression_pct: float = Field(default=25.0, ge=0, le=100)


class Profile(_Strict):
    """A named recipe; `name` comes from the file name, never from its content."""

    name: Name
    description: PlainText = ""
    algorithm: Algorithm
    needs_draft_model: bool = False
    speculative: Speculative = Speculative()
    server: Server = Server()
    env: dict[EnvName, PlainText] = {}
    readiness: Readiness = Readiness()
    smoke: Smoke = Smoke()

    @property
    def is_dflash_family(self) -> bool:
        return self.algorithm in DFLASH_FAMILY

    @property
    def is_eagle_family(self) -> bool:
        return self.algorithm in EAGLE_FAMILY

    @property
    def reported_algorithm(self) -> str:
        """What `/get_server_info` reports: SGLang rewrites NEXTN to EAGLE at start-up."""
        return "EAGLE" if self.algorithm == "NEXTN" else self.algorithm
