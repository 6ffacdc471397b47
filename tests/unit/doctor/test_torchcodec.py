"""torchcodec.variant, torchcodec.abi, torchcodec.ffmpeg, ffmpeg.consistency (cases A-E)."""

from __future__ import annotations

from specops.doctor.model import Status
from specops.probe.facts import FfmpegFacts, SystemFacts, TorchcodecFacts, TorchFacts
from tests.unit.doctor.factory import SITE, context, ffmpeg_libs, healthy_facts, run, torchcodec_facts

CPU_TORCH = TorchFacts(found=True, path=f"{SITE}/torch", version="2.13.0+cpu", cuda=None)
MESSAGE_LOGGER = "_ZN3c1013MessageLoggerC1EPKciib"
COW = "_ZN3c104impl3cow23materialize_cow_storageERNS_11StorageImplE"
NO_FFMPEG = FfmpegFacts(cli_version=None, libs={})


def test_healthy_torchcodec_names_core_5_and_ffmpeg_5() -> None:
    result = run("torchcodec.ffmpeg", context())
    assert (result.status, result.summary) == (Status.PASS, "core 5 will load (FFmpeg 5: libavutil.so.57)")
    assert "host FFmpeg: libavutil.so.57 → FFmpeg 5" in result.evidence


def test_removed_ffmpeg_libs_fail_naming_libavutil_57_with_an_install_hint() -> None:
    facts = healthy_facts(ffmpeg=NO_FFMPEG, torchcodec=torchcodec_facts(host_libs={}))
    result = run("torchcodec.ffmpeg", context(facts))
    assert result.status is Status.FAIL
    assert result.summary == (
        "no FFmpeg libraries found, so no torchcodec core loads: core 5 needs libavutil.so.57, libavcodec.so.59 "
        "and 5 more"
    )
    assert result.hint == (
        "apt-get install ffmpeg (Debian 12 → FFmpeg 5.1) or conda install ffmpeg. "
        "The libs (libavutil.so.N) are what count, not the `ffmpeg` CLI."
    )
    # only the relevant attempt, not the five misleading ones
    assert not any("libavutil.so.60" in line for line in result.evidence)


def test_without_ffmpeg_on_ubuntu_the_attempt_follows_the_distribution() -> None:
    facts = healthy_facts(
        ffmpeg=NO_FFMPEG,
        torchcodec=torchcodec_facts(host_libs={}),
        system=SystemFacts(hostname="u", os_release="Ubuntu 24.04.2 LTS"),
    )
    result = run("torchcodec.ffmpeg", context(facts))
    assert "core 6 needs libavutil.so.58" in result.summary
    assert "apt-get install ffmpeg (Ubuntu 24.04 → FFmpeg 6.1)" in result.hint


def test_partly_removed_ffmpeg_names_the_missing_library_of_the_installed_major() -> None:
    libs = {name: path for name, path in ffmpeg_libs(5).items() if name != "libavfilter.so.8"}
    facts = healthy_facts(ffmpeg=FfmpegFacts(libs=libs), torchcodec=torchcodec_facts(host_libs=libs))
    result = run("torchcodec.ffmpeg", context(facts))
    assert result.status is Status.FAIL
    assert result.summary == "core 5 (for FFmpeg 5) cannot load: libavfilter.so.8 not found"


def test_ffmpeg_9_with_a_torchcodec_without_core_9_fails_saying_so() -> None:
    libs = ffmpeg_libs(9)
    facts = healthy_facts(ffmpeg=FfmpegFacts(libs=libs), torchcodec=torchcodec_facts(host_libs=libs))
    result = run("torchcodec.ffmpeg", context(facts))
    assert result.status is Status.FAIL
    assert result.summary == ("FFmpeg 9 (libavutil.so.61) is installed but torchcodec 0.13.0+cpu supports FFmpeg 4-8")


def test_from_0_16_a_missing_ffmpeg_only_warns_because_import_still_works() -> None:
    codec = torchcodec_facts(version="0.16.0+cpu", host_libs={}, cores=(4, 5, 6, 7, 8, 9))
    result = run("torchcodec.ffmpeg", context(healthy_facts(ffmpeg=NO_FFMPEG, torchcodec=codec)))
    assert result.status is Status.WARN
    assert result.summary.endswith("(import works; video/audio decoding fails)")


def test_torchcodec_0_10_on_torch_2_13_fails_the_abi_check_naming_the_symbol() -> None:
    codec = torchcodec_facts(version="0.10.0", missing_symbols=(MESSAGE_LOGGER, COW))
    result = run("torchcodec.abi", context(healthy_facts(torch=CPU_TORCH, torchcodec=codec)))
    assert result.status is Status.FAIL
    assert result.summary == (
        f"torchcodec 0.10.0 does not match torch 2.13.0+cpu: undefined symbol {MESSAGE_LOGGER}, {COW}"
    )
    assert result.hint == (
        "torchcodec 0.10.0 was built for torch 2.10 (≤0.11 is pinned to one torch minor); install torchcodec ≥0.12, "
        "ABI-stable for torch ≥2.11: pip install 'torchcodec>=0.12' --index-url https://download.pytorch.org/whl/cpu"
    )
    assert "compat table: torchcodec 0.10 was built for torch 2.10; this torch is 2.13.0+cpu" in result.evidence


def test_torchcodec_0_10_core_5_failure_points_at_the_abi_not_at_ffmpeg() -> None:
    codec = torchcodec_facts(version="0.10.0", missing_symbols=(MESSAGE_LOGGER,))
    result = run("torchcodec.ffmpeg", context(healthy_facts(torch=CPU_TORCH, torchcodec=codec)))
    assert result.status is Status.FAIL
    assert result.summary == (
        f"core 5 (for FFmpeg 5) fails: undefined symbol {MESSAGE_LOGGER} (torch ABI, see torchcodec.abi)"
    )


def test_stable_abi_torchcodec_on_an_old_torch_suggests_the_table_match() -> None:
    old_torch = TorchFacts(found=True, version="2.10.0+cpu", cuda=None)
    codec = torchcodec_facts(version="0.13.0+cpu", missing_symbols=("torch_from_blob",))
    result = run("torchcodec.abi", context(healthy_facts(torch=old_torch, torchcodec=codec)))
    assert result.status is Status.FAIL
    assert result.hint == (
        "torchcodec ≥0.12 needs torch ≥2.11: upgrade torch, or pip install 'torchcodec==0.10.*' for torch 2.10.0+cpu"
    )


def test_torchcodec_0_11_without_missing_symbols_passes_noting_the_table() -> None:
    codec = torchcodec_facts(version="0.11.1")
    result = run("torchcodec.abi", context(healthy_facts(torch=CPU_TORCH, torchcodec=codec)))
    assert result.status is Status.PASS
    assert "compat table: torchcodec 0.11 was built for torch 2.11; this torch is 2.13.0+cpu" in result.evidence


def test_cu130_torchcodec_with_cpu_torch_fails_with_the_cpu_index() -> None:
    codec = torchcodec_facts(version="0.17.0+cu130", extra_needed=("libnvrtc.so.13", "libcudart.so.13"))
    result = run("torchcodec.variant", context(healthy_facts(torch=CPU_TORCH, torchcodec=codec)))
    assert result.status is Status.FAIL
    assert result.summary == "torchcodec 0.17.0+cu130 is a CUDA 13 build but torch 2.13.0+cpu is a CPU build"
    assert result.hint == (
        "pip install --force-reinstall torchcodec==0.17.0 --index-url https://download.pytorch.org/whl/cpu"
    )
    assert "`import torchcodec` fails: OSError: libcudart.so.13: cannot open shared object file" in result.evidence


def test_cuda_12_torchcodec_with_cu130_torch_fails() -> None:
    codec = torchcodec_facts(version="0.13.0+cu128")
    result = run("torchcodec.variant", context(healthy_facts(torchcodec=codec)))
    assert result.status is Status.FAIL
    assert result.summary == "torchcodec 0.13.0+cu128 is a CUDA 12 build but torch is CUDA 13"
    assert result.hint.endswith("--index-url https://download.pytorch.org/whl/cu130")


def test_an_untagged_cuda_torchcodec_is_recognised_by_what_it_links() -> None:
    codec = torchcodec_facts(version="0.17.0", extra_needed=("libnvrtc.so.13",))
    result = run("torchcodec.variant", context(healthy_facts(torch=CPU_TORCH, torchcodec=codec)))
    assert result.status is Status.FAIL


def test_torchcodec_checks_skip_without_torchcodec() -> None:
    facts = healthy_facts(torchcodec=TorchcodecFacts(found=False))
    for check_id in ("torchcodec.variant", "torchcodec.abi", "torchcodec.ffmpeg"):
        result = run(check_id, context(facts))
        assert (result.status, result.summary) == (Status.SKIP, "torchcodec is not installed")


def test_ffmpeg_cli_of_another_major_than_the_libraries_warns() -> None:
    facts = healthy_facts(ffmpeg=FfmpegFacts(cli_version="6.1.1-3ubuntu5", libs=ffmpeg_libs(5)))
    result = run("ffmpeg.consistency", context(facts))
    assert result.status is Status.WARN
    assert result.summary == "the ffmpeg CLI is FFmpeg 6 but the libraries are FFmpeg 5 (libavutil.so.57)"


def test_system_ffmpeg_inside_a_conda_env_warns_about_glibcxx() -> None:
    facts = healthy_facts(
        ffmpeg=FfmpegFacts(cli_version="5.1.9", libs=ffmpeg_libs(5), conda_prefix="/opt/conda/envs/sg")
    )
    result = run("ffmpeg.consistency", context(facts))
    assert result.status is Status.WARN
    assert result.summary == (
        "conda env /opt/conda/envs/sg is active but libavutil.so.57 comes from /usr/lib/x86_64-linux-gnu/libavutil.so.57"
    )
    assert "GLIBCXX_3.4.32' not found" in result.hint


def test_ffmpeg_libraries_without_the_cli_pass() -> None:
    result = run("ffmpeg.consistency", context(healthy_facts(ffmpeg=FfmpegFacts(libs=ffmpeg_libs(5)))))
    assert result.status is Status.PASS
    assert result.summary == "FFmpeg 5 libraries (libavutil.so.57); no CLI, torchcodec needs only the libs"


def test_ffmpeg_consistency_skips_without_any_ffmpeg() -> None:
    assert run("ffmpeg.consistency", context(healthy_facts(ffmpeg=NO_FFMPEG))).status is Status.SKIP
