"""`python -m sglang.launch_server`: the test engine's start-up, in SGLang's order and words.

Order: parse/validate args -> import torch (+ torchcodec for multimodal archs) -> load weights
(slowly, with progress lines) -> bind HTTP (`Uvicorn running on ...`) -> warmup generate ->
`The server is fired up and ready to roll!`. Health endpoints answer 503 until that last line.

Env knobs (all optional; tests use them to stay fast or to provoke failures):
  SGLANG_TESTENGINE_LOAD_SECONDS       weight-load time, default 2
  SGLANG_TESTENGINE_WARMUP_SECONDS     extra time before the warmup request, default 1
  SGLANG_TESTENGINE_TOKENS_PER_SECOND  generation speed with a working draft, default 100
  SGLANG_TESTENGINE_MISMATCH_TOKENS_PER_SECOND  speed with the feature-dim mismatch, default 2
  SGLANG_TESTENGINE_ACCEPT_LENGTH      accept length with a working draft (default 3.2 DFLASH/DDTREE, 2.5 EAGLE)
  SGLANG_TESTENGINE_CRASH_AFTER_LOAD   if set, raise RuntimeError(<value>) right after the weights load
  SGLANG_TESTENGINE_COMPILE_SECONDS    "compile" time of a cold start (testengine_cache.py), default 1
  SGLANG_TESTENGINE_TORCHCODEC         fatal (default: a broken torchcodec kills start-up), warn (log
                                       upstream's "Ignore import error" line and go on) or skip
  SGLANG_TESTENGINE_SAMPLED_LOOP       1: answers at temperature > 0 decode a repetition loop, greedy ones
                                       stay fine; 0: never; unset: the build decides (sampling_loop.patch)
  SGLANG_TESTENGINE_HANG_AFTER_SECONDS / _REQUESTS  hang later (sglang/srt/testengine_faults.py), also
                                       settable per build in sglang/testengine_env.json
  (the scheduler child's knobs: sglang/srt/testengine_scheduler.py; the multi-node rendezvous's:
  sglang/srt/testengine_rendezvous.py)

Stop: SIGTERM drains as SGLang does: health answers 503, new requests are refused, running ones finish,
then the process exits (and stops its scheduler child, unless that one leaks). SIGKILL ends it at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import FrameType

from sglang.srt.server_args import ServerArgs, parse_server_args, server_args_dict
from sglang.srt.testengine_cache import use_compile_cache
from sglang.srt.testengine_log import log, uvicorn_log
from sglang.srt.testengine_upstream import check_against_upstream

MIMO_PROCESSOR = "sglang.srt.multimodal.processors.mimo_v2"


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    return float(value) if value else default


def _import_multimodal_processors() -> None:
    """Import the processors like TokenizerManager does for a multimodal architecture."""
    mode = os.environ.get("SGLANG_TESTENGINE_TORCHCODEC", "fatal")
    if mode == "skip":
        return
    try:
        __import__(MIMO_PROCESSOR)
    except (ImportError, RuntimeError) as exc:
        if mode == "fatal":
            raise
        log(f"Ignore import error when loading {MIMO_PROCESSOR}: {exc}")


def _load_weights(args: ServerArgs) -> object:
    from sglang.srt.model_loader import load_model

    seconds = _env_float("SGLANG_TESTENGINE_LOAD_SECONDS", 2.0)
    log("Load weight begin. avail mem=78.50 GB")
    shards = 4
    for shard in range(1, shards + 1):
        time.sleep(seconds / shards)
        log(f"Loading safetensors checkpoint shards: {shard * 100 // shards}% Completed | {shard}/{shards}")
    model = load_model(args)
    log(f"Load weight end. type={model.architecture}, dtype=torch.bfloat16, avail mem=24.10 GB, mem usage=54.40 GB.")
    crash = os.environ.get("SGLANG_TESTENGINE_CRASH_AFTER_LOAD")
    if crash:
        raise RuntimeError(crash)
    return model


def _warmup(state: object, args: ServerArgs) -> None:
    """Wait, send SGLang's warmup request (8 tokens), then mark the server Up."""
    from sglang.srt.http_server import EngineState

    assert isinstance(state, EngineState)
    time.sleep(_env_float("SGLANG_TESTENGINE_WARMUP_SECONDS", 1.0))
    if not args.skip_server_warmup:
        state.generator.generate("The capital city of France is", 8)
    state.up.set()
    log("The server is fired up and ready to roll!")


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _drain_then_shutdown(state: object, server: object) -> None:
    """SGLang's sigterm_watchdog: wait for the running requests, logging how many remain, then stop serving."""
    from sglang.srt.http_server import EngineState

    assert isinstance(state, EngineState)
    last_log = 0.0
    while state.running > 0:
        if time.monotonic() - last_log >= 5:
            log(f"Gracefully exiting... remaining number of requests {state.running}")
            last_log = time.monotonic()
        time.sleep(0.05)
    server.shutdown()  # type: ignore[attr-defined]


def _drain_on_sigterm(state: object, server: object) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        from sglang.srt.http_server import EngineState

        assert isinstance(state, EngineState)
        if state.draining.is_set():
            return
        state.draining.set()
        log(f"SIGTERM received. signum={signum}. Draining requests and shutting down...")
        threading.Thread(target=_drain_then_shutdown, args=(state, server), daemon=True).start()

    signal.signal(signal.SIGTERM, handler)


def launch_server(args: ServerArgs) -> None:
    import torch  # noqa: F401 - SGLang imports torch at start-up; so does the test engine

    from sglang.srt.testengine_scheduler import spawn, stop

    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # before serving there is nothing to drain
    scheduler = spawn()
    try:
        if args.nnodes > 1:  # torch.distributed's rendezvous comes before the weights, as in SGLang's schedulers
            from sglang.srt.testengine_rendezvous import rendezvous

            rendezvous(args.nnodes, args.node_rank, args.dist_init_addr or f"127.0.0.1:{args.port + 233}")
        if args.node_rank > 0:
            _serve_worker(args)
        else:
            _serve(args)
    finally:
        stop(scheduler)


def _serve_worker(args: ServerArgs) -> None:
    """A node of rank >= 1 runs schedulers only: it loads its weights and serves no HTTP; it ends on SIGTERM or
    when rank 0 goes away (testengine_rendezvous.py)."""
    _load_weights(args)
    log(f"Node rank {args.node_rank} is running schedulers only; the HTTP server runs on node rank 0.")
    while True:
        time.sleep(3600)


def _serve(args: ServerArgs) -> None:
    from sglang.srt.generator import Generator
    from sglang.srt.http_server import EngineState, make_server
    from sglang.srt.model_loader import LoadedModel

    model = _load_weights(args)
    assert isinstance(model, LoadedModel)
    use_compile_cache()
    if model.is_multimodal:
        _import_multimodal_processors()
    state = EngineState(args, Generator(model, args.speculative_num_draft_tokens), model.context_length)
    try:
        server = make_server(state)
    except OSError as exc:
        sys.stdout.write(
            f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
            f"('{args.host}', {args.port}): {exc.strerror.lower() if exc.strerror else exc}\n"
        )
        sys.stdout.flush()
        raise SystemExit(1) from None
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    threading.Thread(target=_warmup, args=(state, args), daemon=True).start()
    _drain_on_sigterm(state, server)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    from sglang.srt.testengine_faults import apply_build_env

    apply_build_env()
    words = sys.argv[1:] if argv is None else argv
    args = parse_server_args(words)
    check_against_upstream(words)
    fields = ", ".join(f"{key}={value!r}" for key, value in server_args_dict(args).items())
    log(f"server_args=ServerArgs({fields})")
    launch_server(args)


if __name__ == "__main__":
    main()
