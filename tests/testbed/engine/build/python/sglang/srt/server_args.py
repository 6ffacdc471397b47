"""Server arguments of the test engine: SGLang's flag names, defaults and speculative validation.

Only the flags the specops profiles pass exist; anything else is rejected by argparse (exit 2), as a
real build rejects a flag it does not know. The checks mirror SGLang's `handle_speculative_decoding`
so a profile that a real server would refuse is refused here too, with a similar message.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 30000
    tp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    page_size: int = 1
    mem_fraction_static: float | None = None
    context_length: int | None = None
    max_running_requests: int | None = None
    enable_metrics: bool = False
    trust_remote_code: bool = False
    skip_server_warmup: bool = False
    enable_dp_attention: bool = False
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_dflash_block_size: int | None = None
    speculative_draft_window_size: int | None = None
    speculative_draft_attention_backend: str | None = None
    attention_backend: str | None = None
    speculative_ddtree_budget: int | None = None
    speculative_use_rejection_sampling: bool = False
    disable_overlap_schedule: bool = False
    device: str = "cuda"
    api_key: str | None = None
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        """Upstream's entry point for the flags (`launch_server` and specops' preflight both call it)."""
        _add_arguments(parser)

    @classmethod
    def from_cli_args(cls, namespace: argparse.Namespace) -> ServerArgs:
        """Build and validate (ValueError/AssertionError), as upstream's `ServerArgs.from_cli_args`."""
        values = vars(namespace)
        defaults = {
            "port": 30000,
            "tp_size": 1,
            "dp_size": 1,
            "pp_size": 1,
            "page_size": 1,
            "device": "cuda",
            "nnodes": 1,
            "node_rank": 0,
        }
        return cls(**{key: defaults.get(key) if value is None and key in defaults else value
                      for key, value in values.items()})  # fmt: skip

    def __post_init__(self) -> None:
        if self.served_model_name is None:
            self.served_model_name = self.model_path
        handle_speculative_decoding(self)


def _int_flags() -> list[str]:
    return [
        "--port",
        "--tp-size",
        "--dp-size",
        "--pp-size",
        "--page-size",
        "--context-length",
        "--max-running-requests",
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--speculative-dflash-block-size",
        "--speculative-draft-window-size",
        "--speculative-ddtree-budget",
        "--nnodes",
        "--node-rank",
    ]


def build_parser() -> argparse.ArgumentParser:
    """The launch_server parser; `prog` stays argparse's default (launch_server.py) like upstream."""
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-path", "--model", required=True)
    parser.add_argument("--device", default=None)
    parser.add_argument("--served-model-name")
    parser.add_argument("--host", default="127.0.0.1")
    for flag in _int_flags():
        parser.add_argument(flag, type=int, default=None)
    parser.add_argument("--mem-fraction-static", type=float)
    parser.add_argument("--speculative-algorithm", type=str)
    parser.add_argument("--speculative-draft-model-path", "--speculative-draft-model")
    parser.add_argument("--speculative-draft-attention-backend")
    parser.add_argument("--attention-backend")
    parser.add_argument("--api-key", type=str, default=None)
    parser.add_argument("--dist-init-addr", "--nccl-init-addr", type=str, default=None)
    for flag in (
        "--enable-metrics",
        "--trust-remote-code",
        "--skip-server-warmup",
        "--enable-dp-attention",
        "--speculative-use-rejection-sampling",
    ):
        parser.add_argument(flag, action="store_true")


def parse_server_args(argv: list[str]) -> ServerArgs:
    """Parse argv (exit 2 on unknown flags) and validate like SGLang (ValueError/AssertionError)."""
    return ServerArgs.from_cli_args(build_parser().parse_args(argv))


def handle_speculative_decoding(args: ServerArgs) -> None:
    """Alias, then validate the speculative flags the way SGLang's speculative hook does."""
    if args.speculative_algorithm is None:
        return
    args.speculative_algorithm = _resolve_alias(args.speculative_algorithm.upper())
    algo = SpeculativeAlgorithm.from_string(args.speculative_algorithm)
    if algo in (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.DDTREE):
        _handle_dflash(args)
        if algo == SpeculativeAlgorithm.DDTREE:
            _handle_ddtree(args)
    elif algo.is_eagle() or algo.is_standalone():
        _handle_eagle_family(args)
    if args.max_running_requests is None:
        args.max_running_requests = 48


def _resolve_alias(name: str) -> str:
    """NEXTN shares the EAGLE implementation; a Gemma4 assistant draft would make it FROZEN_KV_MTP."""
    return "EAGLE" if name in ("NEXTN", "EAGLE") else name


def _handle_eagle_family(args: ServerArgs) -> None:
    triple = (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens)
    given = [value is not None for value in triple]
    assert all(given) or not any(given), (
        "--speculative-num-steps, --speculative-eagle-topk, and --speculative-num-draft-tokens "
        "must be either all set or all unset"
    )
    if not any(given):
        args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens = 3, 1, 4
    if args.speculative_eagle_topk == 1 and args.speculative_num_steps is not None:
        args.speculative_num_draft_tokens = args.speculative_num_steps + 1
    if args.speculative_use_rejection_sampling and args.speculative_eagle_topk != 1:
        raise ValueError("--speculative-use-rejection-sampling requires --speculative-eagle-topk 1.")


def _handle_dflash(args: ServerArgs) -> None:
    name = args.speculative_algorithm
    if args.enable_dp_attention:
        raise ValueError(f"Currently {name} speculative decoding does not support dp attention.")
    if args.pp_size != 1:
        raise ValueError(f"Currently {name} speculative decoding only supports pp_size == 1.")
    if not args.speculative_draft_model_path:
        raise ValueError("DFLASH requires --speculative-draft-model-path.")
    if args.speculative_use_rejection_sampling and name == "DFLASH":
        raise ValueError("--speculative-use-rejection-sampling is only supported for EAGLE, EAGLE3 and NEXTN.")
    args.speculative_num_steps = 1
    args.speculative_eagle_topk = 1
    block, draft = args.speculative_dflash_block_size, args.speculative_num_draft_tokens
    if block is not None and block <= 0:
        raise ValueError(f"--speculative-dflash-block-size must be > 0, got {block}.")
    if block is not None and draft is not None and block != draft:
        raise ValueError(
            "--speculative-dflash-block-size must equal --speculative-num-draft-tokens for DFLASH, "
            f"got block_size={block} and num_draft_tokens={draft}."
        )
    if block is None and draft is None:
        block = _draft_block_size(args.speculative_draft_model_path)
    block = block if block is not None else draft
    args.speculative_dflash_block_size = block
    args.speculative_num_draft_tokens = block
    window = args.speculative_draft_window_size
    if window is not None and (window <= 0 or (block is not None and window < block)):
        raise ValueError(f"--speculative-draft-window-size must be >= the DFLASH block size ({block}), got {window}.")


def _handle_ddtree(args: ServerArgs) -> None:
    if args.speculative_use_rejection_sampling:
        raise ValueError("DDTREE does not support --speculative-use-rejection-sampling.")
    if args.page_size != 1:
        raise ValueError(f"DDTREE requires --page-size 1, got {args.page_size}.")
    block = args.speculative_dflash_block_size or 16
    if args.speculative_ddtree_budget is None:
        args.speculative_ddtree_budget = block - 1
    if args.speculative_ddtree_budget > block - 1 and args.attention_backend != "triton":
        raise ValueError("DDTREE full-tree mode currently supports only the triton attention backend")
    args.disable_overlap_schedule = True


def _draft_block_size(draft_path: str | None) -> int:
    """Infer the block size from the draft config, falling back to 16 like SGLang."""
    try:
        with open(os.path.join(str(draft_path), "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return 16
    nested = config.get("dflash_config") or {}
    return int(nested.get("block_size") or config.get("block_size") or 16)


def server_args_dict(args: ServerArgs) -> dict[str, object]:
    return dataclasses.asdict(args)
