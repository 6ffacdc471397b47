"""The bad-config corpus: each mistake prints one pinned `file: path: message` line (and the hint) and exits 3.

The expected lines are what an operator sees; a change to any message must be deliberate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specops.errors import ConfigError
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST


def _host(extra: str = "", drop: tuple[str, ...] = ()) -> str:
    lines = [line for line in VALID_HOST.splitlines() if line.split(" =")[0] not in drop]
    return "\n".join(lines) + "\n" + extra


CASES = [
    pytest.param(
        _host('port = "abc"\n'),
        "specops.toml: hosts.llm-two.port: Input should be a valid integer (got 'abc')",
        id="port_not_integer",
    ),
    pytest.param(
        _host("port = 30000.5\n"),
        "specops.toml: hosts.llm-two.port: Input should be a valid integer (got 30000.5)",
        id="port_fraction",
    ),
    pytest.param(
        _host("port = 70000\n"),
        "specops.toml: hosts.llm-two.port: Input should be less than or equal to 65535",
        id="port_too_large",
    ),
    pytest.param(
        _host("prot = 30001\n"),
        "specops.toml: hosts.llm-two.prot: unknown key (specops rejects unknown keys to catch typos); did you mean 'port'?",
        id="unknown_host_key_typo",
    ),
    pytest.param(
        _host(drop=("ssh",)), "specops.toml: hosts.llm-two.ssh: required setting is missing", id="missing_ssh"
    ),
    pytest.param(
        _host(drop=("python",)), "specops.toml: hosts.llm-two.python: required setting is missing", id="missing_python"
    ),
    pytest.param(
        _host(drop=("model_path",)),
        "specops.toml: hosts.llm-two.model_path: required setting is missing",
        id="missing_model_path",
    ),
    pytest.param(
        _host('python = "venv/bin/python"\n', drop=("python",)),
        "specops.toml: hosts.llm-two.python: 'venv/bin/python' is not an absolute path specops can quote safely: it must start with '/' and use only letters, digits and . _ + @ = , : / -",
        id="python_relative",
    ),
    pytest.param(
        _host('python = "/opt/my venv/bin/python"\n', drop=("python",)),
        "specops.toml: hosts.llm-two.python: '/opt/my venv/bin/python' is not an absolute path specops can quote safely: it must start with '/' and use only letters, digits and . _ + @ = , : / -",
        id="python_with_space",
    ),
    pytest.param(
        _host('python = "/opt/../venv/bin/python"\n', drop=("python",)),
        "specops.toml: hosts.llm-two.python: '/opt/../venv/bin/python' contains '..'; give the real path",
        id="python_dotdot",
    ),
    pytest.param(
        _host('service = "sglang\\nExecStartPre=/bin/sh"\n'),
        "specops.toml: hosts.llm-two.service: contains a control character ('\\n'); newlines, NUL and other control characters could inject into a shell command or a unit file",
        id="service_newline_injection",
    ),
    pytest.param(
        _host('service = "sglang.service"\n'),
        "specops.toml: hosts.llm-two.service: 'sglang.service': give the unit name without '.service'",
        id="service_with_suffix",
    ),
    pytest.param(
        _host('ssh = "-oProxyCommand=touch /tmp/pwned"\n', drop=("ssh",)),
        "specops.toml: hosts.llm-two.ssh: '-oProxyCommand=touch /tmp/pwned' starts with '-' and would be read as an ssh option",
        id="ssh_option_injection",
    ),
    pytest.param(
        _host('ssh = "root@host;reboot"\n', drop=("ssh",)),
        "specops.toml: hosts.llm-two.ssh: 'root@host;reboot' is not an ssh alias or user@host[:port]",
        id="ssh_shell_metachar",
    ),
    pytest.param(
        _host('env = { HF_HOME = "/data\\nExecStart=/bin/sh" }\n'),
        "specops.toml: hosts.llm-two.env.HF_HOME: contains a control character ('\\n'); newlines, NUL and other control characters could inject into a shell command or a unit file",
        id="env_value_newline",
    ),
    pytest.param(
        _host('env = { HF_HOME = "/data\\u0000x" }\n'),
        "specops.toml: hosts.llm-two.env.HF_HOME: contains a control character ('\\x00'); newlines, NUL and other control characters could inject into a shell command or a unit file",
        id="env_value_nul",
    ),
    pytest.param(
        _host('env = { "1BAD" = "x" }\n'),
        "specops.toml: hosts.llm-two.env.1BAD: '1BAD' is not a valid environment variable name (letters, digits, '_')",
        id="env_bad_name",
    ),
    pytest.param(
        _host('extra_args = ["--log-level\\ninfo"]\n'),
        "specops.toml: hosts.llm-two.extra_args.0: contains a control character ('\\n'); newlines, NUL and other control characters could inject into a shell command or a unit file",
        id="extra_args_newline",
    ),
    pytest.param(
        _host('extra_args = ["--log-level", "info", "--port=31000"]\n'),
        "specops.toml: hosts.llm-two.extra_args.2: --port is set by specops from the host and profile settings; set it there instead",
        id="extra_args_managed_flag",
    ),
    pytest.param(
        _host('secrets = ["HF-TOKEN"]\n'),
        "specops.toml: hosts.llm-two.secrets.0: 'HF-TOKEN' is not a valid environment variable name (letters, digits, '_')",
        id="secret_bad_name",
    ),
    pytest.param(
        _host('gpus = "0;1"\n'),
        "specops.toml: hosts.llm-two.gpus: '0;1' is not a GPU index list like '0' or '0,1,2,3'",
        id="gpus_bad",
    ),
    pytest.param(
        _host("tp_size = 0\n"),
        "specops.toml: hosts.llm-two.tp_size: Input should be greater than or equal to 1",
        id="tp_size_zero",
    ),
    pytest.param(
        _host("limit_nofile = 10\n"),
        "specops.toml: hosts.llm-two.limit_nofile: Input should be greater than or equal to 1024",
        id="limit_nofile_tiny",
    ),
    pytest.param(
        _host('base_dir = "/opt/$HOME"\n'),
        "specops.toml: hosts.llm-two.base_dir: '/opt/$HOME' is not an absolute path specops can quote safely: it must start with '/' and use only letters, digits and . _ + @ = , : / -",
        id="base_dir_dollar",
    ),
    pytest.param(
        _host('model_path = "not a path"\n', drop=("model_path",)),
        "specops.toml: hosts.llm-two.model_path: 'not a path' is neither an absolute path nor a Hugging Face repo id like 'org/name'",
        id="model_path_not_path",
    ),
    pytest.param(
        _host('listen = "127.0.0.1\\n"\n'),
        "specops.toml: hosts.llm-two.listen: contains a control character ('\\n'); newlines, NUL and other control characters could inject into a shell command or a unit file",
        id="listen_newline",
    ),
    pytest.param(
        _host('profile = "ddtre"\n', drop=("profile",)),
        "specops.toml: hosts.llm-two.profile: no profile named 'ddtre' (known: ddtree, dflash, nextn)",
        id="profile_unknown",
    ),
    pytest.param(
        _host(drop=("draft_model_path",)),
        "specops.toml: hosts.llm-two.draft_model_path: DDTREE needs a draft model (profile 'ddtree')",
        id="ddtree_without_draft",
    ),
    pytest.param(
        _host('\n[groups]\ngpu = ["llm-two", "llm-three"]\n'),
        "specops.toml: groups.gpu: unknown host or group 'llm-three'",
        id="groups_unknown_host",
    ),
    pytest.param(
        _host('\n[groups]\ngpu = ["llm-two", "all"]\nall = ["gpu"]\n'),
        "specops.toml: groups.gpu: contains itself: gpu -> all -> gpu",
        id="groups_cycle",
    ),
    pytest.param(
        _host('\n[groups]\n"llm-two" = ["llm-two"]\n'),
        "specops.toml: groups.llm-two: a group cannot have the same name as a host or engine",
        id="group_named_like_host",
    ),
    pytest.param(
        "host = 1\n" + _host(),
        "specops.toml: host: unknown key (expected one of: defaults, engines, groups, hosts, notify, secrets_file)",
        id="top_level_typo",
    ),
    pytest.param(_host("port = \n"), "specops.toml: line 7, column 8: Invalid value", id="toml_syntax"),
    pytest.param(
        '[defaults]\npythn = "/usr/bin/python3"\n\n' + _host(),
        "specops.toml: defaults.pythn: unknown key (specops rejects unknown keys to catch typos); did you mean 'python'?",
        id="defaults_unknown_key",
    ),
    pytest.param(
        '[defaults]\nport = "x"\n\n' + _host(),
        "specops.toml: defaults.port: Input should be a valid integer (got 'x')",
        id="defaults_bad_port",
    ),
    pytest.param(
        'hosts = ["llm-two"]\n',
        "specops.toml: hosts: expected a table of hosts like [hosts.llm-two]",
        id="hosts_not_table",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.speculative]\ndflash_block_size = 8\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.speculative.dflash_block_size: DDTREE needs dflash_block_size = num_draft_tokens; got 8 and 16",
        id="override_block_mismatch",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.smoke]\nmin_tps = 30\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.smoke.min_tps: unknown key (specops rejects unknown keys to catch typos)",
        id="override_unknown_field",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.medusa.smoke]\nmin_tokens_per_s = 30\n"),
        "specops.toml: hosts.llm-two.overrides.medusa: no profile named 'medusa' (known: ddtree, dflash, nextn)",
        id="override_unknown_profile",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.server]\npage_size = 16\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.server.page_size: DDTREE needs page_size = 1; got 16",
        id="override_page_size",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.speculative]\nuse_rejection_sampling = true\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.speculative.use_rejection_sampling: DDTREE does not support rejection sampling",
        id="override_rejection_sampling",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.speculative]\ndraft_window_size = 8\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.speculative.draft_window_size: DDTREE needs draft_window_size >= block size 16; got 8",
        id="override_window_below_block",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.server]\nenable_dp_attention = true\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.server.enable_dp_attention: DDTREE does not support DP attention",
        id="override_dp_attention",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.server]\npp_size = 2\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.server.pp_size: DDTREE needs pp_size = 1; got 2",
        id="override_pp_size",
    ),
    pytest.param(
        _host("\n[hosts.llm-two.overrides.ddtree.speculative]\neagle_topk = 4\n"),
        "specops.toml: hosts.llm-two.overrides.ddtree.speculative.eagle_topk: DDTREE forces eagle_topk to 1; got 4 (remove it)",
        id="override_topk_for_dflash",
    ),
    pytest.param(
        _host('env = ["A"]\n'),
        "specops.toml: hosts.llm-two.env: Input should be a valid dictionary",
        id="env_list_not_table",
    ),
    pytest.param(
        _host() + "[groups]\nempty = []\n",
        "specops.toml: groups.empty: an empty group; list its hosts or remove it",
        id="group_empty",
    ),
    pytest.param(
        "a = " + "[" * 3000 + "]" * 3000 + "\n",
        "specops.toml: nested too deeply to read",
        id="nesting_too_deep",
    ),
    pytest.param(
        _host("port = true\n"),
        "specops.toml: hosts.llm-two.port: Input should be a valid integer (got True)",
        id="port_boolean",
    ),
    pytest.param(
        _host("port = 30000.0\n"),
        "specops.toml: hosts.llm-two.port: Input should be a valid integer (got 30000.0)",
        id="port_whole_float",
    ),
    pytest.param(
        _host('listen = ""\n'),
        "specops.toml: hosts.llm-two.listen: '' is not an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::1)",
        id="listen_empty",
    ),
    pytest.param(
        _host('listen = "localhost"\n'),
        "specops.toml: hosts.llm-two.listen: 'localhost' is not an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::1)",
        id="listen_name",
    ),
    pytest.param(
        _host('service = "ssh"\n'),
        "specops.toml: hosts.llm-two.service: 'ssh' is a system service: a deploy would overwrite and restart it (for 'ssh', the host would drop off the network). Name the engine's own unit, e.g. 'sglang'",
        id="service_ssh",
    ),
    pytest.param(
        _host('service = "systemd-journald"\n'),
        "specops.toml: hosts.llm-two.service: 'systemd-journald' is a system service: a deploy would overwrite and restart it (for 'ssh', the host would drop off the network). Name the engine's own unit, e.g. 'sglang'",
        id="service_journald",
    ),
    pytest.param(
        _host('gpus = "0,1,0"\n'),
        "specops.toml: hosts.llm-two.gpus: '0,1,0' lists GPU 0 more than once",
        id="gpus_duplicate",
    ),
    pytest.param(
        _host('gpus = "0,1"\ntp_size = 4\n'),
        "specops.toml: hosts.llm-two.tp_size: tp_size 4 needs 4 GPUs, but gpus lists 2 (0,1)",
        id="tp_size_more_than_gpus",
    ),
    pytest.param(
        _host('ssh = "root@llm-two:0"\n', drop=("ssh",)),
        "specops.toml: hosts.llm-two.ssh: 'root@llm-two:0': port 0 is outside 1-65535",
        id="ssh_port_zero",
    ),
    pytest.param(
        _host('ssh = "llm-two:99999"\n', drop=("ssh",)),
        "specops.toml: hosts.llm-two.ssh: 'llm-two:99999': port 99999 is outside 1-65535",
        id="ssh_port_too_large",
    ),
    pytest.param(
        _host('extra_args = ["--hos", "0.0.0.0"]\n'),
        "specops.toml: hosts.llm-two.extra_args.0: --hos is an abbreviation SGLang would read as --host, which specops sets from the host and profile settings; set it there instead",
        id="extra_args_prefix_host",
    ),
    pytest.param(
        _host('extra_args = ["--model-pat=/x"]\n'),
        "specops.toml: hosts.llm-two.extra_args.0: --model-pat is an abbreviation SGLang would read as --model-path, which specops sets from the host and profile settings; set it there instead",
        id="extra_args_prefix_model_path",
    ),
    pytest.param(
        _host('python = "/' + "a" * 5000 + '"\n', drop=("python",)),
        "specops.toml: hosts.llm-two.python: a path of 5001 characters is longer than any host accepts (4096)",
        id="python_path_too_long",
    ),
    pytest.param(
        _host('become = "su"\n'),
        "specops.toml: hosts.llm-two.become: Input should be 'sudo' or 'none'",
        id="become_not_sudo",
    ),
    pytest.param(
        _host("become = true\n"),
        "specops.toml: hosts.llm-two.become: Input should be 'sudo' or 'none'",
        id="become_boolean",
    ),
    pytest.param(
        _host('become = "sudo"\nbecome_user = "-s"\n'),
        "specops.toml: hosts.llm-two.become_user: '-s' is not a user or group name: use letters, digits, '_' and '-', "
        "starting with a letter or '_', at most 31 characters",
        id="become_user_option",
    ),
    pytest.param(
        _host('become = "sudo"\nbecome_user = "#0"\n'),
        "specops.toml: hosts.llm-two.become_user: '#0' is not a user or group name: use letters, digits, '_' and '-', "
        "starting with a letter or '_', at most 31 characters",
        id="become_user_uid",
    ),
    pytest.param(
        _host('become_user = "svc"\n'),
        'specops.toml: hosts.llm-two.become_user: has no effect without become = "sudo" (set become = "sudo" '
        "beside it, or remove it)",
        id="become_user_without_become",
    ),
    pytest.param(
        '[defaults]\nbecome_user = "svc"\n\n' + _host(),
        'specops.toml: defaults.become_user: has no effect without become = "sudo" (set become = "sudo" beside '
        "it, or remove it)",
        id="defaults_become_user_without_become",
    ),
]

PROFILE_CASES = [
    pytest.param(
        "fast.toml",
        'algorithm = "NEXTN"\n[smoke]\nmin_tokens_per_s = inf\n',
        "fast",
        "profiles/fast.toml: smoke.min_tokens_per_s: Input should be a finite number",
        id="profile_infinite_floor",
    ),
    pytest.param(
        "fast.toml",
        'algorithm = "NEXTN"\n[readiness]\ntimeout_s = 99999999\n',
        "fast",
        "profiles/fast.toml: readiness.timeout_s: Input should be less than or equal to 86400",
        id="profile_absurd_timeout",
    ),
    pytest.param(
        "fast.toml",
        'algorithm = "NEXTN"\n[smoke]\nmax_new_tokens = true\n',
        "fast",
        "profiles/fast.toml: smoke.max_new_tokens: Input should be a valid integer (got True)",
        id="profile_boolean_count",
    ),
    pytest.param(
        "fast.toml",
        'algorithm = "MEDUSA"\n',
        "fast",
        "profiles/fast.toml: algorithm: Input should be 'NEXTN', 'EAGLE', 'EAGLE3', 'DFLASH', 'DDTREE', 'STANDALONE' or 'NGRAM'",
        id="profile_bad_algorithm",
    ),
    pytest.param(
        "eagle.toml",
        'algorithm = "EAGLE"\n[speculative]\nnum_steps = 3\neagle_topk = 1\nnum_draft_tokens = 6\n',
        "eagle",
        "profiles/eagle.toml: speculative.num_draft_tokens: with eagle_topk = 1 SGLang forces num_draft_tokens to num_steps + 1 = 4; got 6",
        id="profile_topk1_draft_tokens",
    ),
    pytest.param(
        "eagle.toml",
        'algorithm = "EAGLE"\n[speculative]\nnum_steps = 3\nnum_draft_tokens = 4\n',
        "eagle",
        "profiles/eagle.toml: speculative: num_steps, eagle_topk and num_draft_tokens must be set together or not at all (SGLang asserts this); missing: eagle_topk",
        id="profile_eagle_partial_triple",
    ),
    pytest.param(
        "fast.toml",
        'name = "other"\nalgorithm = "EAGLE"\n',
        "fast",
        "profiles/fast.toml: name: a profile is named by its file name; remove this key",
        id="profile_has_name_key",
    ),
    pytest.param(
        "mtp.toml",
        'algorithm = "NEXTN"\n[speculative]\ndflash_block_size = 16\n',
        "mtp",
        "profiles/mtp.toml: speculative.dflash_block_size: dflash_block_size is only for DFLASH and DDTREE; NEXTN does not use it",
        id="profile_nextn_with_block_size",
    ),
    pytest.param(
        "df.toml",
        'algorithm = "DFLASH"\n[speculative]\nddtree_budget = 15\n',
        "df",
        "profiles/df.toml: speculative.ddtree_budget: ddtree_budget is only for DDTREE; DFLASH does not use it",
        id="profile_dflash_budget",
    ),
    pytest.param(
        "df.toml",
        'algorithm = "DFLASH"\n[smoek]\nprompt = "x"\n',
        "df",
        "profiles/df.toml: smoek: unknown key (specops rejects unknown keys to catch typos); did you mean 'smoke'?",
        id="profile_unknown_section",
    ),
    pytest.param(
        "df.toml",
        'algorithm = "DFLASH"\n[smoke]\nmin_accept_length = 0.5\n',
        "df",
        "profiles/df.toml: smoke.min_accept_length: Input should be greater than or equal to 1",
        id="profile_smoke_negative",
    ),
]


def _assert_config_error(result_code: int, err: str, expected: str) -> None:
    assert result_code == 3, err
    assert err.splitlines() == [f"error: {expected}", f"hint: {ConfigError.default_hint}"]
    assert "Traceback" not in err


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_bad_inventory_is_reported_with_its_path(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], text: str, expected: str
) -> None:
    write_config(text)
    result = run_cli(capsys, "config", "check")
    _assert_config_error(result.code, result.err, expected)
    assert result.out == ""


@pytest.mark.parametrize(("file", "content", "name", "expected"), PROFILE_CASES)
def test_bad_user_profile_is_reported_with_its_file(
    capsys: pytest.CaptureFixture[str],
    write_config: Callable[[str], Path],
    config_dir: Path,
    file: str,
    content: str,
    name: str,
    expected: str,
) -> None:
    write_config(VALID_HOST.replace('profile = "ddtree"', f'profile = "{name}"'))
    (config_dir / "profiles").mkdir()
    (config_dir / "profiles" / file).write_text(content, encoding="utf-8")
    result = run_cli(capsys, "config", "check")
    _assert_config_error(result.code, result.err, expected)


UNREADABLE_FILES = [
    pytest.param(
        "specops.toml",
        b'[hosts.x]\nssh = "\xff\xfe"\n',
        "specops.toml: not UTF-8 text (byte 17): is this the right file?",
        id="inventory_not_utf8",
    ),
    pytest.param(
        "profiles/fast.toml",
        bytes(range(128, 256)),
        "profiles/fast.toml: not UTF-8 text (byte 0): is this the right file?",
        id="profile_binary",
    ),
    pytest.param(
        "profiles/fast.toml", None, "profiles/fast.toml: is a folder, not a TOML file", id="profile_is_a_folder"
    ),
]


@pytest.mark.parametrize(("file", "content", "expected"), UNREADABLE_FILES)
def test_a_file_that_is_not_toml_text_is_a_config_error(
    capsys: pytest.CaptureFixture[str],
    write_config: Callable[[str], Path],
    config_dir: Path,
    file: str,
    content: bytes | None,
    expected: str,
) -> None:
    write_config(VALID_HOST)
    target = config_dir / file
    target.parent.mkdir(exist_ok=True)
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    result = run_cli(capsys, "config", "check")
    _assert_config_error(result.code, result.err, expected)


def test_every_mistake_is_reported_at_once(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(_host('port = "abc"\nprot = 1\n', drop=("python",)))
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert result.err.splitlines() == [
        "error: specops.toml: hosts.llm-two.python: required setting is missing",
        "error: specops.toml: hosts.llm-two.port: Input should be a valid integer (got 'abc')",
        "error: specops.toml: hosts.llm-two.prot: unknown key (specops rejects unknown keys to catch typos); did you mean 'port'?",
        f"hint: {ConfigError.default_hint}",
    ]


def test_json_error_carries_every_line(capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]) -> None:
    import json

    write_config(_host("port = 70000\n"))
    result = run_cli(capsys, "--json", "config", "check")
    assert result.code == 3
    error = json.loads(result.out)["error"]
    assert error["lines"] == ["specops.toml: hosts.llm-two.port: Input should be less than or equal to 65535"]
    assert error["exit_code"] == 3
