"""The compile caches of a real start-up, played by the test engine: Triton/FlashInfer/DeepGEMM compile kernels
into their cache folders on a first (cold) start and load them on the next (warm) one.

The engine reads TRITON_CACHE_DIR like Triton does. Cold: it takes SGLANG_TESTENGINE_COMPILE_SECONDS (default
1) to "compile", writes its kernels there and logs "compile cache cold"; warm: it finds them, skips the wait and
logs "compile cache warm". No TRITON_CACHE_DIR: nothing to log (Triton would use ~/.triton).
"""

from __future__ import annotations

import json
import os
import time

from sglang.srt.testengine_log import log

KERNELS = ("fused_moe_kernel", "extend_attention_fwd", "decode_attention_fwd", "rotary_embedding")
INDEX = "testengine-kernels.json"


def use_compile_cache() -> None:
    folder = os.environ.get("TRITON_CACHE_DIR")
    if not folder:
        return
    index = os.path.join(folder, INDEX)
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as handle:
            kernels = json.load(handle)
        log(f"compile cache warm: {len(kernels)} kernels loaded from {folder}")
        return
    log(f"compile cache cold: compiling {len(KERNELS)} kernels into {folder}")
    time.sleep(float(os.environ.get("SGLANG_TESTENGINE_COMPILE_SECONDS") or 1.0))
    os.makedirs(folder, exist_ok=True)
    for kernel in KERNELS:
        with open(os.path.join(folder, f"{kernel}.cubin"), "wb") as handle:
            handle.write(os.urandom(4096))
    with open(index + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(list(KERNELS), handle)
    os.replace(index + ".tmp", index)
