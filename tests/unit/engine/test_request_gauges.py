"""Reading SGLang's running/queued request gauges from /metrics text, as the drain before a restart does."""

from __future__ import annotations

from specops.engine.request_gauges import RequestGauges, parse_request_gauges

# the shape of a newer SGLang's /metrics (prometheus_client exposition, labels per rank)
NEWER = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 3.0
sglang:num_running_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="1"} 3.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"} 2.0
sglang:num_running_reqs_offline_batch{model_name="qwen"} 9.0
sglang:num_requests_total{model_name="qwen"} 1.234e+04
"""


def test_tensor_parallel_ranks_report_the_same_requests_once() -> None:
    gauges = parse_request_gauges(NEWER)
    assert gauges == RequestGauges(running=3, queued=2)
    assert gauges.in_flight == 5
    assert gauges.describe() == "3 running, 2 queued"


def test_data_parallel_groups_add_up() -> None:
    text = "\n".join([
        'sglang:num_running_reqs{dp_rank="0",tp_rank="0"} 2.0',
        'sglang:num_running_reqs{dp_rank="0",tp_rank="1"} 2.0',
        'sglang:num_running_reqs{dp_rank="1",tp_rank="0"} 1.0',
        'sglang:num_queue_reqs{dp_rank="0"} 0.0',
        'sglang:num_queue_reqs{dp_rank="1"} 4.0',
    ])  # fmt: skip
    assert parse_request_gauges(text) == RequestGauges(running=3, queued=4)


def test_older_builds_without_labels_and_a_timestamp() -> None:
    text = "sglang:num_running_reqs 1 1764547200000\nsglang:num_queue_reqs 0\n"
    assert parse_request_gauges(text) == RequestGauges(running=1, queued=0)


def test_label_values_holding_braces_quotes_and_spaces_do_not_confuse_the_parser() -> None:
    text = 'sglang:num_running_reqs{model_name="my } \\"model\\" {x}"} 7.0\n'
    assert parse_request_gauges(text).running == 7


def test_missing_gauges_are_unknown_not_zero() -> None:
    gauges = parse_request_gauges('sglang:gen_throughput{model_name="q"} 120.5\n')
    assert gauges == RequestGauges(running=None, queued=None)
    assert not gauges.known
    assert gauges.in_flight == 0
    assert "unknown" in gauges.describe()


def test_malformed_and_non_finite_samples_are_skipped() -> None:
    text = "\n".join([
        "sglang:num_running_reqs{broken 5",
        'sglang:num_running_reqs{model_name="q"} NaN',
        'sglang:num_running_reqs{model_name="q"} -1',
        'sglang:num_running_reqs{model_name="q"} lots',
        'sglang:num_queue_reqs{model_name="q"} +Inf',
    ])  # fmt: skip
    assert parse_request_gauges(text) == RequestGauges(running=None, queued=None)


def test_only_running_exported_is_described_alone() -> None:
    gauges = parse_request_gauges('sglang:num_running_reqs{model_name="q"} 0.0\n')
    assert gauges == RequestGauges(running=0, queued=None)
    assert gauges.describe() == "0 running"
