"""Speculative algorithm enum of the test engine, shaped like upstream sglang main.

Deliberately stdlib-only: the specops doctor imports this single module in a subprocess to read the
build's algorithm set and `is_dflash()` behaviour without paying for (or crashing on) a torch import.

This build registers DDTREE (as the DDTree PR branches do) but its `is_dflash()` still answers only
for DFLASH, so a DDTREE launch never captures the target's aux hidden states: the bug that
`ddtree.patch` fixes.
"""

from __future__ import annotations

from enum import Enum, IntEnum, auto

# NEXTN is a reserved alias of EAGLE upstream (spec_registry._RESERVED_ALIASES), never a member.
_RESERVED_ALIASES = {"NEXTN": "EAGLE"}


class SpeculativeAlgorithm(Enum):
    """Speculative decoding algorithms; values are `auto()`, so inserting a member renumbers the rest."""

    DFLASH = auto()
    DDTREE = auto()
    EAGLE = auto()
    EAGLE3 = auto()
    FROZEN_KV_MTP = auto()
    STANDALONE = auto()
    NGRAM = auto()
    NONE = auto()

    @classmethod
    def from_string(cls, name: str | None) -> SpeculativeAlgorithm:
        """Resolve a CLI name: None means NONE, names are case-insensitive, NEXTN means EAGLE."""
        if name is None:
            return cls.NONE
        upper = name.upper()
        upper = _RESERVED_ALIASES.get(upper, upper)
        try:
            return cls[upper]
        except KeyError:
            raise ValueError(f"Unknown speculative algorithm name: {name}") from None

    def is_none(self) -> bool:
        return self == SpeculativeAlgorithm.NONE

    def is_some(self) -> bool:
        return not self.is_none()

    def is_speculative(self) -> bool:
        return self.is_some()

    def is_eagle(self) -> bool:
        # FIXME (as upstream): FROZEN_KV_MTP shares the EAGLE worker family.
        return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3, SpeculativeAlgorithm.FROZEN_KV_MTP)

    def is_eagle3(self) -> bool:
        return self == SpeculativeAlgorithm.EAGLE3

    def is_frozen_kv_mtp(self) -> bool:
        return self == SpeculativeAlgorithm.FROZEN_KV_MTP

    def is_standalone(self) -> bool:
        return self == SpeculativeAlgorithm.STANDALONE

    def is_ngram(self) -> bool:
        return self == SpeculativeAlgorithm.NGRAM

    def is_ddtree(self) -> bool:
        return self == SpeculativeAlgorithm.DDTREE

    def is_dflash(self) -> bool:
        return self == SpeculativeAlgorithm.DFLASH

    def supports_target_verify_for_draft(self) -> bool:
        return self.is_dflash()

    def carries_draft_hidden_states(self) -> bool:
        return self.is_eagle()

    def need_topk(self) -> bool:
        return self.is_eagle() or self.is_standalone()

    def has_draft_kv(self) -> bool:
        return not self.is_ngram()


class SpecInputType(IntEnum):
    """Kinds of speculative batch inputs (upstream names; unused by the engine's fake forward pass)."""

    EAGLE_DRAFT = auto()
    EAGLE_DRAFT_EXTEND = auto()
    EAGLE_VERIFY = auto()
    FROZEN_KV_MTP_DRAFT = auto()
    FROZEN_KV_MTP_VERIFY = auto()
    DFLASH_DRAFT = auto()
    DFLASH_VERIFY = auto()
    DDTREE_VERIFY = auto()
    NGRAM_VERIFY = auto()
