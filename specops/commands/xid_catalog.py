"""NVIDIA's Xid catalogue as data (commands/data/xid.toml): code -> name, class and what the operator does.

Why data: the catalogue grows with every driver branch; a new code is one table entry, read by the doctor's
gpu.xid check and by a failed start alike. Loaded on first use, once: neither a doctor that never meets an Xid nor
the deploy's import time pays for it. The class decides who is at fault: "host" (a GPU reset or a reboot is
needed: no release fixes it), "application" (a kernel of the engine faulted) or "informational".
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

CATALOGUE = Path(__file__).parent / "data" / "xid.toml"
HOST, APPLICATION, INFORMATIONAL = "host", "application", "informational"
UNKNOWN_ACTION = "look the code up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors)"


@dataclass(frozen=True)
class XidInfo:
    code: int
    name: str
    kind: str  # HOST, APPLICATION or INFORMATIONAL
    action: str

    @property
    def host_fault(self) -> bool:
        return self.kind == HOST


@functools.cache
def _table() -> dict[int, XidInfo]:
    with CATALOGUE.open("rb") as handle:
        data = tomllib.load(handle)
    return {int(code): XidInfo(int(code), row["name"], row["class"], row["action"]) for code, row in data.items()}


def xid_info(code: int) -> XidInfo:
    """The catalogue's entry; a code it does not list is informational, with the pointer to NVIDIA's catalogue."""
    return _table().get(code) or XidInfo(code, f"Xid {code}", INFORMATIONAL, UNKNOWN_ACTION)


def host_codes() -> frozenset[int]:
    """Every code after which the GPU needs a reset or the host a reboot."""
    return frozenset(code for code, info in _table().items() if info.host_fault)
