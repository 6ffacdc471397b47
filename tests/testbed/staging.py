"""Put an engine "build", model folders and a specops-rendered unit on a test host, without specops deploy.

The test bed's own e2e tests use this to show that a unit rendered by specops really starts the test
engine under systemd on a test host; deploy tests replace it with `specops deploy`.
"""

from __future__ import annotations

import io
import tarfile
import textwrap
from pathlib import Path

from specops.commands.systemd import render_env_file, render_unit
from specops.config.loader import Target, load_config
from tests.testbed.models import write_model_fixtures
from tests.testbed.testhost import TestHost

MODELS_DIR = "/srv/models"
FAST_ENGINE_ENV = {
    "SGLANG_TESTENGINE_LOAD_SECONDS": "0.5",
    "SGLANG_TESTENGINE_WARMUP_SECONDS": "0.2",
    "SGLANG_TESTENGINE_MISMATCH_TOKENS_PER_SECOND": "8",
    "SGLANG_TESTENGINE_TOKENS_PER_SECOND": "400",
}


def tar_folder(folder: Path) -> bytes:
    """An uncompressed tar of a folder's contents, without caches."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            archive.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buffer.getvalue()


def push_folder(host: TestHost, folder: Path, remote_dir: str) -> None:
    """Copy a local folder into the host (through its overlay) with one tar stream."""
    host.exec(["mkdir", "-p", remote_dir])
    host.exec(["tar", "-x", "-C", remote_dir], input=tar_folder(folder))


def install_models(host: TestHost, scratch: Path) -> dict[str, str]:
    """Write the model fixtures into the host under /srv/models; returns name -> path on the host."""
    folders = write_model_fixtures(scratch / "models")
    for name, folder in folders.items():
        push_folder(host, folder, f"{MODELS_DIR}/{name}")
    return {name: f"{MODELS_DIR}/{name}" for name in folders}


def install_build(host: TestHost, build: Path, release: str, base_dir: str = "/opt/specops") -> str:
    """Unpack a build into <base_dir>/sglang/releases/<release> and point `current` at it."""
    release_dir = f"{base_dir}/sglang/releases/{release}"
    push_folder(host, build, release_dir)
    host.exec(["ln", "-sfn", release_dir, f"{base_dir}/sglang/current"])
    return release_dir


def inventory_toml(host: TestHost, python: Path, draft: str = "draft", profile: str = "ddtree") -> str:
    """A specops.toml for this test host: the engine listens on all addresses so the outer machine can GET it."""
    env = ", ".join(f'{name} = "{value}"' for name, value in FAST_ENGINE_ENV.items())
    return textwrap.dedent(
        f"""\
        [hosts.{host.name}]
        ssh = "{host.name}"
        python = "{python}"
        model_path = "{MODELS_DIR}/target"
        draft_model_path = "{MODELS_DIR}/{draft}"
        served_model_name = "qwen-test"
        listen = "0.0.0.0"
        profile = "{profile}"
        limit_nofile = 20000
        env = {{ {env} }}
        """
    )


def resolve_target(config_dir: Path, toml: str, host_name: str, profile: str | None = None) -> Target:
    """Load the inventory through specops's own config code and resolve the host/profile pair."""
    path = config_dir / "specops.toml"
    path.write_text(toml, encoding="utf-8")
    return load_config(path, config_dir).resolve(host_name, profile)


def install_unit(host: TestHost, target: Target) -> str:
    """Write the unit and env file exactly as `specops render` prints them, then daemon-reload."""
    unit = target.host.unit_name
    host.write_file(f"/etc/systemd/system/{unit}", render_unit(target).encode())
    host.write_file(target.host.env_file, render_env_file(target, secrets={}).encode(), mode=0o600)
    host.exec(["systemctl", "daemon-reload"])
    return unit
