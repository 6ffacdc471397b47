"""Parsers of version files, banners, systemctl output and import failures (recorded texts)."""

from __future__ import annotations

from specops.probe.parse import parse_deep
from specops.probe.parse_text import (
    key_error_line,
    parse_ffmpeg_version,
    parse_nvcc_release,
    parse_os_release,
    parse_systemctl_version,
    parse_unit_show,
    parse_version_py,
)

TORCH_CPU = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
"""


def test_torch_version_py_cpu_and_cuda() -> None:
    assert parse_version_py(TORCH_CPU) == ("2.13.0+cpu", None)
    cu130 = TORCH_CPU.replace("'2.13.0+cpu'", "'2.13.0+cu130'").replace("= None", "= '13.0'", 1)
    assert parse_version_py(cu130) == ("2.13.0+cu130", "13.0")
    assert parse_version_py("__version__ = '0.13.0+cpu'\n") == ("0.13.0+cpu", None)
    assert parse_version_py(None) == (None, None)


def test_banners() -> None:
    assert parse_systemctl_version("systemd 252 (252.38-1~deb12u1)\n+PAM +AUDIT\n") == (
        252,
        "systemd 252 (252.38-1~deb12u1)",
    )
    assert parse_systemctl_version("") == (None, None)
    assert parse_ffmpeg_version("ffmpeg version 5.1.9-0+deb12u1 Copyright (c) 2000-2026") == "5.1.9-0+deb12u1"
    assert parse_nvcc_release("Cuda compilation tools, release 13.0, V13.0.88\n") == "13.0"
    assert (
        parse_os_release('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
        == "Debian GNU/Linux 12 (bookworm)"
    )


def test_unit_show_installed_and_missing() -> None:
    shown = (
        "LoadState=loaded\nActiveState=active\nSubState=running\n"
        'Environment=CUDA_HOME=/usr/local/cuda "NOTE=a b" SGLANG_X=1\nNeedDaemonReload=yes\n'
    )
    unit = parse_unit_show("sglang.service", shown)
    assert unit.exists and unit.active_state == "active" and unit.sub_state == "running" and unit.need_daemon_reload
    assert unit.environment == {"CUDA_HOME": "/usr/local/cuda", "NOTE": "a b", "SGLANG_X": "1"}
    missing = parse_unit_show("sglang.service", "LoadState=not-found\nActiveState=inactive\nSubState=dead\n")
    assert not missing.exists and missing.environment == {}


TORCHCODEC_010 = """RuntimeError: Could not load libtorchcodec. Likely causes:
  1. FFmpeg is not properly installed in your environment. We support versions 4, 5, 6, 7, and 8.
[start of libtorchcodec loading traceback]
FFmpeg version 8:
OSError: libavutil.so.60: cannot open shared object file: No such file or directory
FFmpeg version 5:
OSError: /v/site-packages/torchcodec/libtorchcodec_core5.so: undefined symbol: _ZN3c1013MessageLoggerC1EPKciib
FFmpeg version 4:
OSError: libavutil.so.56: cannot open shared object file: No such file or directory
[end of libtorchcodec loading traceback]."""
NO_FFMPEG = """FFmpeg version 8:
OSError: libavutil.so.60: cannot open shared object file: No such file or directory
FFmpeg version 5:
OSError: libavutil.so.57: cannot open shared object file: No such file or directory"""
CU130_ON_CPU = """OSError: libnvrtc.so.13: cannot open shared object file: No such file or directory
OSError: Could not load this library: /v/torchcodec/libtorchcodec_image.so"""
DRIVER_OLD = (
    "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12080). Please"
)


def test_key_error_line_finds_the_cause() -> None:
    assert (key_error_line(TORCHCODEC_010) or "").endswith("undefined symbol: _ZN3c1013MessageLoggerC1EPKciib")
    assert (
        key_error_line(NO_FFMPEG)
        == "OSError: libavutil.so.60: cannot open shared object file: No such file or directory"
    )
    assert (key_error_line(CU130_ON_CPU) or "").startswith("OSError: libnvrtc.so.13: cannot open")
    assert "(found version 12080)" in (key_error_line("noise\n" + DRIVER_OLD + "\n") or "")
    assert key_error_line("Traceback...\nModuleNotFoundError: No module named 'torch'\n") == (
        "ModuleNotFoundError: No module named 'torch'"
    )


def _command(rc: int, out: str = "", err: str = "", timed_out: bool = False) -> dict[str, object]:
    return {"found": True, "rc": rc, "out": out, "err": err, "timed_out": timed_out, "seconds": 1.0}


def test_parse_deep_healthy_cpu_host() -> None:
    raw = {
        "torch": _command(
            0,
            'SPECOPS_DEEP {"version": "2.13.0+cpu", "cuda": null, "cuda_available": false, '
            '"cuda_error": "AssertionError: Torch not compiled with CUDA enabled"}\n',
        ),
        "torchcodec": _command(0, 'SPECOPS_DEEP {"version": "0.13.0+cpu", "ffmpeg_major": 5}\n'),
        "seconds": 6.5,
    }
    deep = parse_deep(raw)
    assert deep.torch_ok and deep.torch_version == "2.13.0+cpu" and deep.torch_cuda is None
    assert deep.torch_cuda_available is False
    assert deep.torch_error == "AssertionError: Torch not compiled with CUDA enabled"
    assert deep.torchcodec_ok and deep.torchcodec_ffmpeg_major == 5 and deep.torchcodec_error is None
    assert deep.seconds == 6.5


def test_parse_deep_abi_break_and_driver_warning() -> None:
    raw = {
        "torch": _command(
            0, 'SPECOPS_DEEP {"version": "2.13.0+cu130", "cuda": "13.0", "cuda_available": false}\n', DRIVER_OLD
        ),
        "torchcodec": _command(1, "", "Traceback (most recent call last):\n" + TORCHCODEC_010),
    }
    deep = parse_deep(raw)
    assert deep.torch_ok and "(found version 12080)" in (deep.torch_error or "")
    assert deep.torchcodec_ok is False and deep.torchcodec_ffmpeg_major is None
    assert (deep.torchcodec_error or "").endswith("_ZN3c1013MessageLoggerC1EPKciib")


def test_parse_deep_timeout() -> None:
    deep = parse_deep({"torch": _command(None, err="\ntimed out after 120 s", timed_out=True)})  # type: ignore[arg-type]
    assert deep.torch_ok is False and "timed out" in (deep.torch_error or "")
    assert deep.torchcodec_ok is None
