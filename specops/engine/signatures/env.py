"""Signatures of a host environment that cannot run the build: native-library ABI, CUDA driver and runtime
libraries, model files, Python imports.

Why these together: each one says "the code is fine, the host is not", which is the first question an operator
asks after a deploy fails (see docs/troubleshooting.md). Texts are quoted from public SGLang/vLLM/PyTorch issues
(tests/unit/engine/data/journal_corpus/README.md).
"""

from __future__ import annotations

from specops.engine.signatures.model import Signature, sig

_CUDA_LIBS = r"cudart|nvrtc|cublas(?:Lt)?|cudnn\w*|cusparse\w*|cufft|curand|cusolver|nvJitLink|npp\w+|nccl"

ENV_SIGNATURES: tuple[Signature, ...] = (
    sig(
        "cuda-lib-missing",
        "fatal",
        rf"(?P<library>lib(?:{_CUDA_LIBS})\.so(?:\.[\d.]+)?): cannot open shared object file",
        "a CUDA user-space library is not installed or not on the library path",
        "install the CUDA runtime of the major this torch/sgl-kernel was built for (the nvidia-*-cu12/cu13 "
        "wheels or the toolkit) or add its lib directory to LD_LIBRARY_PATH in the host env; "
        "`specops doctor HOST --only cuda`",
        family="cuda-libs",
    ),
    sig(
        "undefined-symbol",
        "error",
        r"(?P<library>[\w.+-]+\.so[\w.]*): undefined symbol: (?P<symbol>\S+)",
        "a native library was built against other versions of its dependencies (ABI mismatch)",
        "reinstall the package built for this torch/CUDA (sgl-kernel, flashinfer, flash-attn wheels are per torch "
        "version); `specops doctor HOST` names which",
        family="abi",
        fatal_if_final=True,
    ),
    sig(
        "driver-too-old",
        "fatal",
        r"The NVIDIA driver on your system is too old \(found version (?P<found_version>\d+)\)",
        "the NVIDIA driver is older than the CUDA this torch was built for",
        "upgrade the driver (CUDA 13 wheels need >= 580), or install torch/sglang built for the driver's CUDA; "
        "`specops doctor HOST --only cuda`",
        family="driver",
    ),
    sig(
        "no-driver",
        "fatal",
        r"Found no NVIDIA driver on your system|lib(?:cuda|nvidia-ml)\.so\.1: cannot open shared object file",
        "no NVIDIA driver is loaded",
        "install the NVIDIA driver (and reboot), check `nvidia-smi`",
        family="driver",
    ),
    sig(
        "model-files",
        "fatal",
        r"does not appear to have a file named (?P<file>[\w.-]+)|Can't load (?:the )?(?:config|tokenizer) for"
        r"|SafetensorError: Error while deserializing header: (?P<header_error>\w+)"
        r"|PermissionError: \[Errno 13\] Permission denied: '(?P<path>[^']*(?:safetensors|\.json|\.bin|model)[^']*)'",
        "the model directory is incomplete or unreadable (a file is missing, a git-lfs pointer instead of weights, "
        "or no read permission for the service user)",
        "check model_path on the host: `ls -l` the files the line names, re-download incomplete shards, make them "
        "readable by the unit's user",
        family="model-files",
    ),
    sig(
        "model-download",
        "fatal",
        r"GatedRepoError|(?:trying to access|Cannot access) (?:a )?gated repo|RepositoryNotFoundError"
        r"|(?:Remote)?EntryNotFoundError|Repository Not Found for url|Entry Not Found for url"
        r"|401 Client Error|403 Client Error",
        "the model could not be downloaded from the Hub: a gated repo without access, no or a wrong token (401), "
        "a misspelled repo id, or a file the repo does not have (the host's credentials or the profile)",
        "accept the model's licence on its Hub page with the token's account, put HF_TOKEN in the host env (never "
        "in the profile), check the repo id and revision; or download it once and point model_path at the "
        "directory",
        family="model-download",
    ),
    sig(
        "import-error",
        "error",
        r"^\s*(?:\w+\.)*(?P<error>ImportError|ModuleNotFoundError): (?P<message>\S.*)",
        "a Python module could not be imported",
        "install the missing package into the host's venv, or fix the build (`specops doctor HOST`)",
        family="import",
        fatal_if_final=True,
        weight=0,
    ),
)
