"""The pure-Python ELF reader on real libraries of this machine."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from specops.remote.probe.elf import ElfError, read_elf
from specops.remote.probe.libs import TORCH_SYMBOL_RE, analyze_library

LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"
LIBSTDCXX = "/lib/x86_64-linux-gnu/libstdc++.so.6"


def test_libz_needs_libc_and_exports_inflate() -> None:
    info = read_elf(LIBZ, want_defined=True)
    assert info["needed"] == ["libc.so.6"]
    assert "inflate" in info["defined"]
    assert "memcpy" in info["undefined"]  # libz calls libc


def test_libstdcxx_needs_libm_and_libc() -> None:
    info = read_elf(LIBSTDCXX)
    assert "libc.so.6" in info["needed"]
    assert "libm.so.6" in info["needed"]


def test_a_text_file_is_not_elf(tmp_path: Path) -> None:
    path = tmp_path / "libfake.so"
    path.write_text("INPUT(-lz)\n")  # a linker script, as some distros ship for libfoo.so
    with pytest.raises(ElfError, match="not an ELF file"):
        read_elf(str(path))


def test_32_bit_elf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lib32.so"
    path.write_bytes(b"\x7fELF\x01\x01\x01" + b"\0" * 57)
    with pytest.raises(ElfError, match="64-bit little-endian"):
        read_elf(str(path))


def test_truncated_section_table_is_an_error(tmp_path: Path) -> None:
    header = bytearray(Path(LIBZ).read_bytes()[:64])
    struct.pack_into("<Q", header, 0x28, 10_000_000)  # section headers far past the end
    path = tmp_path / "libtrunc.so"
    path.write_bytes(bytes(header))
    with pytest.raises(ElfError, match="truncated"):
        read_elf(str(path))


def test_missing_file_is_an_error() -> None:
    with pytest.raises(ElfError, match="FileNotFoundError"):
        read_elf("/nonexistent/libnothing.so")


def test_analyze_library_resolves_libz_dependencies() -> None:
    info = analyze_library(LIBZ)
    assert info == {
        "path": LIBZ,
        "needed": ["libc.so.6"],
        "missing_libs": [],
        "missing_torch_symbols": [],
        "error": None,
    }


def test_analyze_library_reports_unreadable_file_instead_of_raising(tmp_path: Path) -> None:
    path = tmp_path / "libbroken.so"
    path.write_bytes(b"garbage")
    info = analyze_library(str(path))
    assert info["error"] and info["needed"] == []


@pytest.mark.parametrize(
    ("symbol", "torchish"),
    [
        ("_ZN3c1013MessageLoggerC1EPKciib", True),
        ("_ZNK3c1010TensorImpl4sizeEl", True),
        ("_ZN2at6TensorD1Ev", True),
        ("_ZTVN3c1011VariableHooksE", True),
        ("aoti_torch_get_current_cuda_stream", True),
        ("torch_from_blob", True),
        ("_ZNSt6vectorIiSaIiEED1Ev", False),
        ("av_frame_alloc", False),
    ],
)
def test_torch_symbol_filter(symbol: str, torchish: bool) -> None:
    assert bool(TORCH_SYMBOL_RE.match(symbol)) is torchish
