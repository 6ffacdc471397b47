"""Run the test engine as a local subprocess (outside any test host) and wait for it.

For unit tests of the engine itself; e2e tests deploy it to a host and start it through systemd.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.testbed.engine import BUILD_PYTHON

FAST_ENV = {
    "SGLANG_TESTENGINE_LOAD_SECONDS": "0.5",
    "SGLANG_TESTENGINE_WARMUP_SECONDS": "0.5",
    "SGLANG_TESTENGINE_MISMATCH_TOKENS_PER_SECOND": "8",
    "SGLANG_TESTENGINE_TOKENS_PER_SECOND": "400",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    """GET returning (status, body); a refused connection is status 0, like "no server yet"."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, ConnectionError):
        return 0, b""


def http_post_json(url: str, payload: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body


FFMPEG_LIB_DIR = Path("/usr/lib/x86_64-linux-gnu")
FFMPEG_LIBS = ("avutil", "avcodec", "avformat", "avdevice", "avfilter", "swscale", "swresample")


def hide_ffmpeg_prefix(scratch: Path) -> list[str]:
    """argv prefix running a command in a private mount namespace where FFmpeg's libs do not exist.

    An overlay over the system lib dir whose upper layer holds whiteouts (char device 0/0) for every
    libav*/libsw* file: the real dlopen then fails with the real `cannot open shared object file`.
    Needs root; the mount disappears with the namespace, nothing to clean up outside scratch.
    """
    upper, work = scratch / "upper", scratch / "work"
    upper.mkdir(parents=True)
    work.mkdir()
    for lib in FFMPEG_LIBS:
        for path in FFMPEG_LIB_DIR.glob(f"lib{lib}.so*"):
            os.mknod(upper / path.name, 0o600 | stat.S_IFCHR, os.makedev(0, 0))
    mount = f"mount -t overlay overlay -o lowerdir={FFMPEG_LIB_DIR},upperdir={upper},workdir={work} {FFMPEG_LIB_DIR}"
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{mount} && exec "$@"', "sh"]


class LocalEngine:
    """`python -m sglang.launch_server ARGS` from a build folder, stdout+stderr into a log file."""

    def __init__(
        self,
        python: str,
        args: list[str],
        log_path: Path,
        build: Path = BUILD_PYTHON,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(build),
            "PYTHONDONTWRITEBYTECODE": "1",  # keep the build tree as deployable as it is in git
            "SPECOPS_NVIDIA_SMI_HOLDERS": str(log_path.parent / "gpu-holders"),  # never this machine's /run
            **FAST_ENV,
            **(env or {}),
        }
        argv = [
            *(prefix or []),
            python,
            "-m",
            "sglang.launch_server",
            *args,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, env=full_env, cwd=str(log_path.parent)
        )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def health_codes_until_up(self, timeout: float = 60.0) -> list[int]:
        """Poll /health_generate until 200; return the distinct codes seen, in order."""
        seen: list[int] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"engine exited {self.process.returncode}:\n{self.log_text()}")
            code, _ = http_get(self.base_url + "/health_generate", timeout=5)
            if not seen or seen[-1] != code:
                seen.append(code)
            if code == 200:
                return seen
            time.sleep(0.05)
        raise AssertionError(f"engine not up after {timeout}s, codes {seen}:\n{self.log_text()}")

    def wait_exit(self, timeout: float = 60.0) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
