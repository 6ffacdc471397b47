"""Look up a few names in an ELF library's dynamic symbol table through its hash table, as the loader does.

Why: to tell which torch symbols torchcodec/sgl_kernel need that torch lacks, the probe used to read every
exported symbol of libtorch_cpu.so (hundreds of thousands of names, ~0.3-0.5 s of pure Python on the host).
The loader itself never does that: it hashes the name and walks one `.gnu.hash` (or SysV `.hash`) chain.
Doing the same for the few dozen wanted names reads a handful of pages. A library with neither table (never
seen in practice) falls back to the full scan, so the verdict is the same either way.

"Defined" means what the full scan in elf.py counts: not SHN_UNDEF, GLOBAL/WEAK/GNU_UNIQUE binding, default
or protected visibility; symbol versions are ignored (torch does not version its symbols).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterable
from typing import Any

from specops.remote.probe.elf import (
    SHN_UNDEF,
    SHT_DYNSYM,
    STB_GLOBAL,
    STB_GNU_UNIQUE,
    STB_WEAK,
    SYMBOL,
    ElfError,
    _sections,
    read_elf,
)

SHT_HASH = 5
SHT_GNU_HASH = 0x6FFFFFF6
HASH_WORD = struct.Struct("<I")
GNU_HASH_HEADER = struct.Struct("<IIII")  # nbuckets, symoffset, bloom_size, bloom_shift
BLOOM_WORD = struct.Struct("<Q")  # ELFCLASS64: the bloom filter is made of 64-bit words
BLOOM_WORD_BITS = 64


def gnu_hash(name: bytes) -> int:
    """The `.gnu.hash` function (Bernstein's h*33 + c, 32 bits)."""
    value = 5381
    for byte in name:
        value = (value * 33 + byte) & 0xFFFFFFFF
    return value


def sysv_hash(name: bytes) -> int:
    """The SysV `.hash` (DT_HASH) function of the System V ABI."""
    value = 0
    for byte in name:
        value = (value << 4) + byte
        high = value & 0xF0000000
        if high:
            value ^= high >> 24
        value &= ~high & 0xFFFFFFFF
    return value


def defined_in_library(path: str, names: Iterable[str]) -> set[str]:
    """The subset of names that the library at path defines (exports); raises ElfError when unreadable."""
    wanted = sorted(set(names))
    if not wanted:
        return set()
    try:
        with open(path, "rb") as handle:
            sections = _sections(handle)
            tables = _lookup_tables(sections)
            if tables is None:
                return _defined_by_full_scan(path, wanted)
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as image:
                index = SymbolIndex(image, *tables)
                return {name for name in wanted if index.defines(name.encode("utf-8"))}
    except OSError as exc:
        raise ElfError(f"{type(exc).__name__}: {exc}") from exc
    except (struct.error, ValueError, IndexError) as exc:
        raise ElfError(f"malformed ELF: {exc}") from exc


def _lookup_tables(
    sections: list[tuple[int, ...]],
) -> tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """(kind, hash section, dynsym, dynstr) of the best hash table, `.gnu.hash` first; None when there is none."""
    for kind, section_type in (("gnu", SHT_GNU_HASH), ("sysv", SHT_HASH)):
        for section in sections:
            if section[1] != section_type or not 0 < section[6] < len(sections):
                continue
            symbols = sections[section[6]]
            if symbols[1] == SHT_DYNSYM and 0 < symbols[6] < len(sections):
                return kind, section, symbols, sections[symbols[6]]
    return None


def _defined_by_full_scan(path: str, wanted: list[str]) -> set[str]:
    defined: set[str] = read_elf(path, want_defined=True)["defined"]
    return {name for name in wanted if name in defined}


class SymbolIndex:
    """One library's hash table over its mapped file: `defines(name)` walks a single chain."""

    def __init__(
        self, image: Any, kind: str, table: tuple[int, ...], symbols: tuple[int, ...], strings: tuple[int, ...]
    ) -> None:
        self.image = image
        self.kind = kind
        self.table_offset = table[4]
        self.symbols_offset = symbols[4]
        self.symbol_count = symbols[5] // SYMBOL.size
        self.strings_offset, self.strings_size = strings[4], strings[5]

    def word(self, offset: int) -> int:
        value: int = HASH_WORD.unpack_from(self.image, offset)[0]
        return value

    def defines(self, name: bytes) -> bool:
        candidates = self._gnu_candidates(name) if self.kind == "gnu" else self._sysv_candidates(name)
        return any(self._is_defined_as(index, name) for index in candidates)

    def _gnu_candidates(self, name: bytes) -> list[int]:
        """Symbol indexes on name's `.gnu.hash` chain whose stored hash matches (the bloom filter may say no first)."""
        nbuckets, symoffset, bloom_size, bloom_shift = GNU_HASH_HEADER.unpack_from(self.image, self.table_offset)
        if not nbuckets or not bloom_size:
            return []
        value = gnu_hash(name)
        bloom_offset = self.table_offset + GNU_HASH_HEADER.size
        bloom_word = BLOOM_WORD.unpack_from(self.image, bloom_offset + 8 * ((value // BLOOM_WORD_BITS) % bloom_size))[0]
        mask = (1 << (value % BLOOM_WORD_BITS)) | (1 << ((value >> bloom_shift) % BLOOM_WORD_BITS))
        if bloom_word & mask != mask:
            return []
        buckets_offset = bloom_offset + 8 * bloom_size
        chain_offset = buckets_offset + 4 * nbuckets
        index = self.word(buckets_offset + 4 * (value % nbuckets))
        found: list[int] = []
        while symoffset <= index < self.symbol_count:
            stored = self.word(chain_offset + 4 * (index - symoffset))
            if stored | 1 == value | 1:
                found.append(index)
            if stored & 1:  # the last entry of this chain
                break
            index += 1
        return found

    def _sysv_candidates(self, name: bytes) -> list[int]:
        """Symbol indexes on name's SysV `.hash` chain (bounded: a corrupt chain must not loop forever)."""
        nbucket, nchain = struct.unpack_from("<II", self.image, self.table_offset)
        if not nbucket:
            return []
        chain_offset = self.table_offset + 8 + 4 * nbucket
        index = self.word(self.table_offset + 8 + 4 * (sysv_hash(name) % nbucket))
        found: list[int] = []
        for _step in range(nchain):
            if not 0 < index < min(nchain, self.symbol_count):
                break
            found.append(index)
            index = self.word(chain_offset + 4 * index)
        return found

    def _is_defined_as(self, index: int, name: bytes) -> bool:
        name_offset, st_info, st_other, shndx, _value, _size = SYMBOL.unpack_from(
            self.image, self.symbols_offset + index * SYMBOL.size
        )
        exported = st_info >> 4 in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE) and st_other & 3 in (0, 3)
        if shndx == SHN_UNDEF or not exported:
            return False
        start = self.strings_offset + name_offset
        end = start + len(name)
        return bool(
            name_offset + len(name) < self.strings_size and self.image[start:end] == name and self.image[end] == 0
        )
