"""Signatures of a process that started but could not keep running: GPU and host memory, NCCL, ports, warmup,
kernel JIT compiles.

Why these together: the environment looked fine at import time; these name what broke once the engine used the
GPUs, the network or the compiler. Texts are quoted from public SGLang/vLLM/PyTorch issues
(tests/unit/engine/data/journal_corpus/README.md).
"""

from __future__ import annotations

from specops.engine.signatures.model import Signature, sig

_OOM_KILL_HINT = (
    "exit code -9 is SIGKILL, usually the kernel's OOM killer: check `journalctl -k | grep -i oom` on the host, "
    "then lower host memory use (hicache size, CPU offload) or give the host more memory"
)

RUNTIME_SIGNATURES: tuple[Signature, ...] = (
    sig(
        "cuda-oom",
        "fatal",
        r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory",
        "the GPU ran out of memory",
        "lower server.mem_fraction_static or context_length in the profile, or free the GPU "
        "(`nvidia-smi` shows other processes)",
        family="gpu-oom",
    ),
    sig(
        "kv-cache-no-room",
        "fatal",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        "after loading the weights no GPU memory is left for the KV cache",
        "raise server.mem_fraction_static (the weights need most of the GPU), use more GPUs (tp) or a smaller "
        "model/draft; `nvidia-smi` shows whether another process holds memory",
        family="gpu-oom",
    ),
    sig(
        "scheduler-died",
        "fatal",
        r"Rank (?P<rank>\d+) scheduler (?:is dead|died during initialization \(exit code: (?P<exit_code>-?\d+)\))",
        "an SGLang scheduler process (one TP rank) died",
        _OOM_KILL_HINT + "; another exit code: read the rank's lines above",
        family="rank-killed",
    ),
    sig(
        "process-killed",
        "fatal",
        r"^\s*(?:Killed|已杀死)\s*$|exits with return code = -9|exited on signal 9 \(Killed\)",
        "the process was killed with SIGKILL",
        _OOM_KILL_HINT,
        family="rank-killed",
    ),
    sig(
        "nccl",
        "fatal",
        r"NCCL error|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|Remote)Error",
        "NCCL (multi-GPU communication) failed",
        "check the GPUs and topology (`nvidia-smi topo -m`), stale processes holding GPUs, and NCCL_* env; "
        "retry with NCCL_DEBUG=INFO in the host env",
        family="nccl",
    ),
    sig(
        "dist-port-in-use",
        "fatal",
        r"The server socket has failed to listen on any local network address"
        r"|TCPStore\S* .*(?:EADDRINUSE|[Aa]ddress already in use)",
        "the distributed init port (torch TCPStore, SGLang's dist_init_addr / nccl_port) is taken",
        "another engine or a stale rank holds the port: find it with `ss -ltnp` on the host and stop it, or start "
        "one engine per host",
        family="port",
    ),
    sig(
        "engine-port-taken",
        "fatal",
        r"(?P<port_name>\w*port) at (?P<port>\d+) is not available in \d+ seconds",
        "one of the engine's own ports (HTTP, metrics, NCCL, dist-init, bootstrap) is held by another process",
        "the message names the port and often the process holding it: stop that process (`ss -ltnp` on the host; "
        "an old engine started by hand), or move the port in the profile's server flags",
        family="port",
    ),
    sig(
        "address-in-use",
        "fatal",
        r"(?i)address already in use",
        "the engine's port is taken by another process",
        "stop whatever listens on the port (`ss -ltnp` on the host), or set another `port` for this host",
        family="port",
    ),
    sig(
        "warmup-failed",
        "fatal",
        r"Initialization failed\. warmup error",
        "the server started but its warmup request failed",
        "read the lines above it in `journalctl -u SERVICE`; often GPU memory, a kernel (FlashInfer JIT "
        "needs CUDA_HOME/nvcc) or the draft",
        family="warmup",
    ),
    sig(
        "jit-compile-failed",
        "fatal",
        r"errors? detected in the compilation of|ninja: build stopped: subcommand failed|Ninja build failed"
        r"|`ptxas` failed with error code|bin/ptxas'.*returned non-zero exit status|Internal Triton PTX codegen error"
        r"|fatal error: [\w./-]+\.(?:h|hpp|cuh): No such file or directory|nvcc fatal"
        r"|triton\.compiler\.errors\.CompilationError",
        "a GPU kernel failed to compile at run time (FlashInfer JIT via nvcc, or Triton via ptxas)",
        "the unit needs a CUDA toolkit matching torch's CUDA (CUDA_HOME, nvcc, headers; see `cuda_home`) and a "
        "Triton/ptxas that knows this GPU; read the compiler's first `error` line above",
        family="jit",
    ),
    sig(
        "manager-died",
        "fatal",
        r"(?P<manager>TokenizerManager|DetokenizerManager) hit an exception"
        r"|couldn't get a response from (?P<from>detokenizer|tokenizer)",
        "SGLang's tokenizer or detokenizer process died or stopped answering: requests hang or fail although the "
        "HTTP server still answers",
        "restart the engine; read the manager's traceback above (a tokenizer that cannot decode this model's "
        "tokens, a state table too small: SGLANG_DETOKENIZER_MAX_STATES); a release that changed the tokenizer "
        "or the chat template is the first suspect",
        family="process-died",
    ),
    sig(
        "torch-compile-failed",
        "fatal",
        r"BackendCompilerFailed|torch\._inductor\.exc\.\w+Error|InductorError",
        "torch.compile (Dynamo/Inductor, with Triton or the host's C compiler) failed to build the model's graph",
        "a C compiler and Python headers are needed on the host (gcc, python3-dev) for Triton's launcher; "
        "otherwise it is the build's torch/Triton pair: disable compilation (SGLang: no --enable-torch-compile; "
        "vLLM: --enforce-eager or -O0) and report it with the versions",
        family="jit",
    ),
)
