"""The hash-table symbol lookup (elfhash.py) against the full dynsym scan (elf.py), on real libraries.

Why compare with the full scan: the probe's verdict "torch lacks symbol X" used to come from reading every
export; the hash lookup must give exactly the same answers, for names torch has, names it lacks, and the one
that breaks torchcodec 0.10 on torch 2.13.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from specops.remote.probe import libs
from specops.remote.probe.elf import ElfError, _sections, read_elf
from specops.remote.probe.elfhash import SHT_GNU_HASH, SHT_HASH, _lookup_tables, defined_in_library
from tests.testbed.pyenv import site_packages, torchcodec_010_dir

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"  # glibc ships both .gnu.hash and .hash, and versioned duplicates
MESSAGE_LOGGER_OLD_ABI = "_ZN3c1013MessageLoggerC1EPKciib"  # torchcodec 0.10 needs it; torch 2.13 dropped it
SHT_PROGBITS = 1
SECTION_TYPE_AT, SECTION_OFFSET_AT = 4, 24  # byte offsets of sh_type and sh_offset in an ELF64 section header


def full_scan_sample(path: str, every: int = 1) -> tuple[set[str], set[str]]:
    """(a sample of names: every n-th defined one plus every undefined one, the defined set) by the full scan."""
    info = read_elf(path, want_defined=True)
    sample = set(sorted(info["defined"])[::every]) | set(info["undefined"])
    sample |= {MESSAGE_LOGGER_OLD_ABI, "specops_no_such_symbol", ""}
    return sample, info["defined"]


def patch_sections(path: Path, section_type: int, field_at: int, value: int) -> None:
    """Overwrite one field (u32 type or u64 offset) of every section header of the given type."""
    data = bytearray(path.read_bytes())
    with path.open("rb") as handle:
        sections = _sections(handle)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    for index, section in enumerate(sections):
        if section[1] == section_type:
            struct.pack_into("<I" if field_at == SECTION_TYPE_AT else "<Q", data, shoff + 64 * index + field_at, value)
    path.write_bytes(bytes(data))


def lookup_kind(path: Path) -> str | None:
    with path.open("rb") as handle:
        tables = _lookup_tables(_sections(handle))
    return tables[0] if tables else None


@pytest.fixture
def libc_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "libc.so.6"
    shutil.copyfile(LIBC, copy)
    return copy


def test_gnu_hash_lookup_agrees_with_full_scan_on_libc(libc_copy: Path) -> None:
    assert lookup_kind(libc_copy) == "gnu"
    sample, defined = full_scan_sample(str(libc_copy))
    found = defined_in_library(str(libc_copy), sample)
    assert found == sample & defined
    assert {"memcpy", "printf", "malloc"} <= found  # memcpy has two versions: both sit on one chain


def test_sysv_hash_is_the_fallback_without_gnu_hash(libc_copy: Path) -> None:
    patch_sections(libc_copy, SHT_GNU_HASH, SECTION_TYPE_AT, SHT_PROGBITS)
    assert lookup_kind(libc_copy) == "sysv"
    sample, defined = full_scan_sample(str(libc_copy))
    assert defined_in_library(str(libc_copy), sample) == sample & defined


def test_full_scan_is_the_last_resort_without_any_hash_table(libc_copy: Path) -> None:
    patch_sections(libc_copy, SHT_GNU_HASH, SECTION_TYPE_AT, SHT_PROGBITS)
    patch_sections(libc_copy, SHT_HASH, SECTION_TYPE_AT, SHT_PROGBITS)
    assert lookup_kind(libc_copy) is None
    assert defined_in_library(str(libc_copy), ["memcpy", "specops_no_such_symbol"]) == {"memcpy"}


def test_a_hash_table_past_the_end_of_the_file_is_an_error(libc_copy: Path) -> None:
    patch_sections(libc_copy, SHT_GNU_HASH, SECTION_OFFSET_AT, 10_000_000_000)
    with pytest.raises(ElfError, match="malformed"):
        defined_in_library(str(libc_copy), ["memcpy"])


def test_not_an_elf_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "libtorch_fake.so"
    path.write_text("INPUT(-ltorch)\n")
    with pytest.raises(ElfError, match="not an ELF file"):
        defined_in_library(str(path), ["torch_x"])


def torch_lib_dir(venv: Path) -> Path:
    return site_packages(venv) / "torch" / "lib"


def test_torch_libraries_lookup_agrees_with_full_scan(host_venv_built: Path) -> None:
    torch_libs = torch_lib_dir(host_venv_built)
    paths = sorted(torch_libs.glob("libtorch*.so")) + sorted(torch_libs.glob("libc10*.so"))
    assert any(p.name == "libtorch_cpu.so" for p in paths)
    for path in paths:
        assert lookup_kind(path) == "gnu", path.name
        sample, defined = full_scan_sample(str(path), every=37)
        assert defined_in_library(str(path), sample) == sample & defined, path.name


@pytest.fixture
def torch_of_host_venv(host_venv_built: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """libs.py looking at the host venv's torch (this interpreter has none), with an empty lookup cache."""
    monkeypatch.setattr(libs, "torch_lib_dir", lambda: str(torch_lib_dir(host_venv_built)))
    monkeypatch.setattr(libs, "_CACHE", {})
    return host_venv_built


def expected_missing(library: Path, torch_libs: Path) -> list[str]:
    """The old verdict: the library's undefined torch symbols that no full scan of torch's libraries finds."""
    exports: set[str] = set()
    for path in sorted(torch_libs.glob("libtorch*.so")) + sorted(torch_libs.glob("libc10*.so")):
        exports |= read_elf(str(path), want_defined=True)["defined"]
    wanted = {name for name in read_elf(str(library))["undefined"] if libs.TORCH_SYMBOL_RE.match(name)}
    return sorted(wanted - exports)


def test_torchcodec_010_misses_the_old_message_logger_in_torch_213(torch_of_host_venv: Path) -> None:
    core5 = torchcodec_010_dir(torch_of_host_venv) / "torchcodec" / "libtorchcodec_core5.so"
    info = libs.analyze_library(str(core5))
    assert MESSAGE_LOGGER_OLD_ABI in info["missing_torch_symbols"]
    assert info["missing_torch_symbols"] == expected_missing(core5, torch_lib_dir(torch_of_host_venv))


def test_torchcodec_013_misses_nothing_in_torch_213(torch_of_host_venv: Path) -> None:
    core5 = site_packages(torch_of_host_venv) / "torchcodec" / "libtorchcodec_core5.so"
    assert libs.analyze_library(str(core5))["missing_torch_symbols"] == []
    assert expected_missing(core5, torch_lib_dir(torch_of_host_venv)) == []
