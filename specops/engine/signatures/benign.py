"""Lines that look alarming but are not a failure, and the start-up steps (progress, ready).

Why a table of harmless lines: an operator grepping for "error" or "failed" after a bad deploy finds these first
(custom all-reduce falling back, ignored model imports, NCCL looking for optional plugins) and chases them. Naming
them as harmless, and never as fatal, keeps the real cause on top. They are scanned before any failure signature,
so a benign line cannot be mistaken for one.
"""

from __future__ import annotations

from specops.engine.signatures.model import Signature, sig

_HARMLESS = "harmless: the engine goes on; nothing to fix unless a failure names it"

BENIGN_SIGNATURES: tuple[Signature, ...] = (
    sig(
        "custom-allreduce-fallback",
        "benign",
        r"Setup Custom allreduce failed|Custom allreduce is disabled because",
        "custom all-reduce is not available between these GPUs (no P2P/NVLink); tensor parallelism uses NCCL",
        "harmless; set `disable_custom_all_reduce` in the profile's server flags to silence it",
        family="benign",
    ),
    sig(
        "processor-retry",
        "benign",
        r"does not accept \{[^}]*\}; retrying without them",
        "a multimodal processor did not accept an optional argument; SGLang retried without it",
        _HARMLESS,
        family="benign",
    ),
    sig(
        "nccl-info",
        "benign",
        r"NCCL INFO ",
        "NCCL debug output (NCCL_DEBUG=INFO): optional plugins not found are expected",
        _HARMLESS,
        family="benign",
        weight=0,
    ),
    sig(
        "flashinfer-jit-fallback",
        "benign",
        r"Prebuilt kernels not found, using JIT backend",
        "FlashInfer has no prebuilt kernels for this setup and compiles them on first use",
        "harmless if the unit has a CUDA toolkit (nvcc); the first requests are slower",
        family="benign",
    ),
    sig(
        "gloo-peers",
        "benign",
        r"\[Gloo\] Rank \d+ is connected to \d+ peer ranks|^\s*Expected number of connected peer ranks is",
        "Gloo (CPU-side group) reports its peers during start-up",
        _HARMLESS,
        family="benign",
        weight=0,
    ),
    sig(
        "c10d-store-eof",
        "benign",
        r"\[c10d - debug\] Read callback failed|heart beat monitor thread joined",
        "torch.distributed debug output when a peer closes its store connection (shutdown)",
        _HARMLESS + "; the cause of a shutdown is in the lines before it",
        family="benign",
        weight=0,
    ),
    sig(
        "ptxas-driver-fallback",
        "benign",
        r"Failed to compile generated PTX with ptxas\. Falling back to compilation by driver",
        "ptxas could not compile; the driver compiles the PTX instead",
        _HARMLESS,
        family="benign",
    ),
    sig(
        "safetensors-no-index",
        "benign",
        r"No model\.safetensors\.index\.json found",
        "a single-file checkpoint has no shard index; the weights load from the one file",
        _HARMLESS,
        family="benign",
    ),
    sig(
        "moe-default-config",
        "benign",
        r"Using default MoE config\. Performance might be sub-optimal",
        "no tuned fused-MoE kernel config for this GPU and expert shape; the default one is used",
        "harmless for correctness; tune one with SGLang's fused-MoE tuning script if MoE throughput matters",
        family="benign",
    ),
    sig(
        "torch-threads-reduced",
        "benign",
        r"Reducing Torch parallelism from \d+ threads to \d+ to avoid unnecessary CPU contention",
        "the worker lowered torch's CPU threads so that several ranks do not compete for the cores",
        _HARMLESS + " (set OMP_NUM_THREADS in the host env to choose)",
        family="benign",
    ),
    sig(
        "blas-backend-fallback",
        "benign",
        r"Attempting to use hipBLASLt on an unsupported architecture! Overriding blas backend",
        "this GPU has no hipBLASLt support; torch uses hipBLAS instead",
        _HARMLESS,
        family="benign",
    ),
)

IGNORED_IMPORT = sig(
    "ignored-import",
    "warning",
    r"Ignore import error when loading (?P<module>[\w.]+)",
    "SGLang skipped a model or multimodal processor module that failed to import (text serving still works)",
    "harmless for the models this host serves unless the module is theirs; fix it if the host serves images, "
    "audio or video",
    family="benign",
)

# Start-up steps SGLang logs (id, pattern, phase): each one is progress that extends the readiness deadline.
_PROGRESS = (
    ("server-args", r"server_args=ServerArgs\(", "starting"),
    ("distributed", r"Init torch distributed", "starting"),
    ("load-begin", r"Load weight begin", "loading weights"),
    ("load-shards", r"Loading safetensors checkpoint shards:\s*(?P<percent>\d+)% Completed \| (?P<shards>\d+/\d+)",
     "loading weights"),
    ("load-end", r"Load weight end", "weights loaded"),
    ("kv-cache", r"KV Cache is allocated|Memory pool end", "allocating KV cache"),
    ("cuda-graph", r"Capture cuda graph|Capturing batches", "capturing CUDA graphs"),
    ("http-up", r"Uvicorn running on|Application startup complete", "warming up"),
    ("batch", r"(?:Prefill|Decode) batch", "warming up"),
)  # fmt: skip

STEP_SIGNATURES: tuple[Signature, ...] = (
    *(sig(sig_id, "progress", pattern, phase, family="progress", phase=phase) for sig_id, pattern, phase in _PROGRESS),
    sig("ready", "ready", r"The server is fired up and ready to roll!", "warmup passed: the server is ready",
        family="ready"),
)  # fmt: skip
