"""The torchcodec ELF method applied to sglang's other torch extensions (sgl_kernel, flashinfer).

A C++ extension built against another torch fails at import with `undefined symbol: _ZN3c10...`, which
takes the whole server down at start; reading DT_NEEDED and undefined symbols predicts it without importing.
"""

from __future__ import annotations

from specops.doctor.checks._helpers import listing
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped
from specops.doctor.registry import check
from specops.probe.facts import NativeExtFacts


def _problems(name: str, ext: NativeExtFacts) -> list[str]:
    lines = []
    for file_name, lib in sorted(ext.libs.items()):
        if lib.missing_torch_symbols:
            lines.append(f"{name}/{file_name}: undefined symbol {listing(lib.missing_torch_symbols, 2)}")
        if lib.missing_libs:
            lines.append(f"{name}/{file_name}: cannot open {', '.join(lib.missing_libs)}")
        if lib.error:
            lines.append(f"{name}/{file_name}: unreadable ({lib.error})")
    return lines


@check("native_ext.abi", "sgl_kernel and flashinfer libraries resolve their libraries and torch symbols")
def native_ext_abi(ctx: CheckContext) -> CheckResult:
    found = {name: ext for name, ext in sorted(ctx.facts.native_ext.items()) if ext.found}
    if not found:
        return skipped("native_ext.abi", "no sgl_kernel or flashinfer installed")
    evidence = [f"{name} {ext.version or '?'}: {len(ext.libs)} native libraries" for name, ext in found.items()]
    problems = [line for name, ext in found.items() for line in _problems(name, ext)]
    if problems:
        broken = sorted({line.split("/", 1)[0] for line in problems})
        torch = ctx.facts.torch.version or "this torch"
        symbols = any("undefined symbol" in line for line in problems)
        cause = f"was built against another torch than {torch}" if symbols else "needs libraries this host lacks"
        return failed(
            "native_ext.abi",
            f"{' and '.join(broken)} {cause}: {problems[0].split(': ', 1)[1]}",
            f"install the {' and '.join(broken)} build made for torch {torch} (the version your sglang pins): "
            f"pip install --force-reinstall --no-deps {broken[0]}==<sglang's pin>",
            evidence + problems,
        )
    names = ", ".join(f"{name} {ext.version or '?'}" for name, ext in found.items())
    return passed("native_ext.abi", f"{names}: every library resolves", evidence)
