"""The compile cache outlives releases: prepared with the deploy's own commands on a LocalHost, it is still
there, with what the engine compiled into it, after every release but the newest has been pruned."""

from __future__ import annotations

import os
from pathlib import Path

from specops.build.stage import stage_build
from specops.config.inventory import HostSpec
from specops.host.local import LocalHost
from specops.ops import cache
from specops.ops import release as push
from specops.ops import release_changes as changes


def test_pruning_releases_never_touches_the_compile_cache(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    folder = cache.prepare(host, spec, "torch2.13.0_cu130-cuda13.0-sm90")
    kernel = Path(spec.service_dir) / "cache" / "triton" / "kernel.cubin"  # through the link, as the engine writes
    kernel.parent.mkdir(parents=True)
    kernel.write_bytes(b"\0" * 4096)
    for index in range(3):
        push.push_release(
            host, spec, stage_build(build, [], tmp_path / f"w{index}"), base=None, release_id=f"r-0{index}"
        )
    assert changes.prune(host, spec, keep=1, protect=set()) == ["r-00", "r-01"]
    assert os.readlink(Path(spec.service_dir) / "cache") == folder
    assert (Path(folder) / "triton" / "kernel.cubin").read_bytes() == b"\0" * 4096
    assert oct(Path(folder).stat().st_mode & 0o777) == "0o700"
    measured = cache.measure(host, spec)
    assert measured is not None and measured["path"] == folder
    assert isinstance(measured["bytes"], int) and measured["bytes"] >= 4096  # du -sb: the kernel and the folders
