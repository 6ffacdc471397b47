"""A pure-Python reader of 64-bit little-endian ELF shared libraries: DT_NEEDED, RPATH/RUNPATH, dynamic symbols.

Why: whether torchcodec (or sgl_kernel) can load is decided by which sonames resolve and which torch symbols
exist. Reading that from the files takes a fraction of a second and never imports torch, which costs
seconds and can crash on exactly the hosts the doctor is meant to diagnose.
"""

from __future__ import annotations

import struct
from typing import Any, BinaryIO

ELF_MAGIC = b"\x7fELF"
SHT_DYNAMIC = 6
SHT_DYNSYM = 11
DT_NEEDED, DT_RPATH, DT_RUNPATH = 1, 15, 29
SHN_UNDEF = 0
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
DYNAMIC_ENTRY = struct.Struct("<qQ")
SYMBOL = struct.Struct("<IBBHQQ")


class ElfError(Exception):
    """The file is not an ELF library this reader understands (or cannot be read)."""


def _read_at(handle: BinaryIO, offset: int, size: int) -> bytes:
    handle.seek(offset)
    data = handle.read(size)
    if len(data) != size:
        raise ElfError("truncated file")
    return data


def _sections(handle: BinaryIO) -> list[tuple[int, ...]]:
    ident = handle.read(64)
    if ident[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    if len(ident) != 64:
        raise ElfError("truncated file")
    if ident[4] != 2 or ident[5] != 1:
        raise ElfError("only 64-bit little-endian ELF is supported")
    shoff = struct.unpack_from("<Q", ident, 0x28)[0]
    entsize, count = struct.unpack_from("<HH", ident, 0x3A)
    if not shoff or entsize != SECTION_HEADER.size:
        raise ElfError("no section headers")
    table = _read_at(handle, shoff, entsize * count)
    return [SECTION_HEADER.unpack_from(table, i * entsize) for i in range(count)]


def _c_string(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _section_bytes(handle: BinaryIO, section: tuple[int, ...]) -> bytes:
    return _read_at(handle, section[4], section[5])


def read_elf(path: str, want_defined: bool = False) -> dict[str, Any]:
    """{needed, rpath, runpath, undefined[, defined]} of one library; raises ElfError when unreadable."""
    try:
        with open(path, "rb") as handle:
            return _read_open_elf(handle, want_defined)
    except OSError as exc:
        raise ElfError(f"{type(exc).__name__}: {exc}") from exc
    except struct.error as exc:
        raise ElfError(f"malformed ELF: {exc}") from exc


def _read_open_elf(handle: BinaryIO, want_defined: bool) -> dict[str, Any]:
    sections = _sections(handle)
    info: dict[str, Any] = {"needed": [], "rpath": [], "runpath": [], "undefined": []}
    for section in sections:
        if section[1] == SHT_DYNAMIC:
            _read_dynamic(handle, section, sections, info)
    defined: set[str] = set()
    for section in sections:
        if section[1] == SHT_DYNSYM:
            _read_symbols(handle, section, sections, info["undefined"], defined if want_defined else None)
    if want_defined:
        info["defined"] = defined
    return info


def _read_dynamic(
    handle: BinaryIO, section: tuple[int, ...], sections: list[tuple[int, ...]], info: dict[str, Any]
) -> None:
    strings = _section_bytes(handle, sections[section[6]])
    data = _section_bytes(handle, section)
    for index in range(len(data) // DYNAMIC_ENTRY.size):
        tag, value = DYNAMIC_ENTRY.unpack_from(data, index * DYNAMIC_ENTRY.size)
        if tag == 0:
            break
        if tag == DT_NEEDED:
            info["needed"].append(_c_string(strings, value))
        elif tag in (DT_RPATH, DT_RUNPATH):
            key = "rpath" if tag == DT_RPATH else "runpath"
            info[key].extend(p for p in _c_string(strings, value).split(":") if p)


def _read_symbols(
    handle: BinaryIO,
    section: tuple[int, ...],
    sections: list[tuple[int, ...]],
    undefined: list[str],
    defined: Any,
) -> None:
    strings = _section_bytes(handle, sections[section[6]])
    data = _section_bytes(handle, section)
    for name_offset, st_info, st_other, shndx, _value, _size in SYMBOL.iter_unpack(data):
        if not name_offset:
            continue
        binding = st_info >> 4
        if shndx == SHN_UNDEF:
            if binding == STB_GLOBAL:  # weak undefined symbols may stay unresolved without failing dlopen
                undefined.append(_c_string(strings, name_offset))
        elif defined is not None and binding in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE) and st_other & 3 in (0, 3):
            defined.add(_c_string(strings, name_offset))
