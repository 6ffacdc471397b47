"""The smoke gate: does the running server really decode speculatively, fast, and produce real text?

Why a gate after readiness: an unpatched DDTREE build comes up "healthy" - /health_generate is 200 - and then
answers `!!!!!!!!` at 2 tokens/s with accept length 1.0. Only a real generation shows it.

Steps: GET /get_server_info (version, the algorithm as SGLang reports it - EAGLE for NEXTN -, the draft),
GET /v1/models (served name), then POST /generate with the profile's prompt at temperature 0, ignore_eos,
max_new_tokens. Gates (docs/smoke.md):
  algorithm     server_info.speculative_algorithm == profile.reported_algorithm
  served-model  the host's served_model_name is listed by /v1/models (when set)
  tokens        completion_tokens == max_new_tokens (ignore_eos: every token must come)
  tokens-per-s  completion_tokens / e2e_latency >= smoke.min_tokens_per_s
  accept-length meta_info.spec_accept_length >= smoke.min_accept_length
  output        not degenerate (specops.engine.degenerate): not empty, no `!!!!`, no dominant token (a loop
                of words only warns: greedy decoding with ignore_eos loops on healthy models too)
Then, unless the greedy answer already failed, `smoke.sampled_requests` concurrent streamed requests at the
profile's temperature > 0 and top_p (specops.engine.sampled):
  sampled-requests  every stream completes (no error event, no abort)
  sampled-output    no answer is degenerate: the loops a sampling bug writes
Compared with earlier releases (specops.engine.smoke_compare):
  regression    tokens/s, accept length and sampled tokens/s within smoke.max_regression_pct of the previous
                verified release of this profile
  ttft          sampled TTFT p50 and p99 within smoke.max_ttft_regression_pct (or 50 ms) of it (else a warning)
  speedup       tokens/s against smoke.baseline_release (only when named; a gate with smoke.min_speedup)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from specops.commands.manifest import Figures
from specops.engine.degenerate import degenerate_reason, loop_reason
from specops.engine.sampled import run_sampled, skipped_gates
from specops.engine.signatures import Match, primary_cause
from specops.engine.smoke_compare import regression_gate, speedup_gate, ttft_gate
from specops.engine.smoke_types import Gate, SmokeFigures, finite
from specops.errors import SpecopsError

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.engine.client import EngineClient

TEXT_HEAD_CHARS = 80
ANSWER_GATES = ("sampled-output", "sampled-requests")  # their detail names requests


@dataclass(frozen=True)
class SmokeResult:
    """All gates, the figures measured (recorded in the release manifest for the next regression check)."""

    passed: bool
    gates: list[Gate]
    figures: SmokeFigures
    cause: Match | None = None
    problems: list[Match] = field(default_factory=list)
    sampled: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed_gates(self) -> list[Gate]:
        return [gate for gate in self.gates if not gate.ok]

    @property
    def warnings(self) -> list[Gate]:
        return [gate for gate in self.gates if gate.ok and gate.warn]

    @property
    def reason(self) -> str:
        """One line: which gates failed and, when the journal knows, why (or the warnings of a pass)."""
        if self.passed:
            warned = "; ".join(f"{gate.id}: {gate.detail.removeprefix('warning: ')}" for gate in self.warnings)
            return "all smoke gates passed" + (f" (warning: {warned})" if warned else "")
        text = "smoke gate failed: " + "; ".join(
            f"{gate.id} {gate.observed} (want {gate.expected})" + _first_answer(gate) for gate in self.failed_gates
        )
        return text + (f"; cause: {self.cause.summary}" if self.cause else "")

    def to_json(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "gates": [gate.to_json() for gate in self.gates],
            "figures": self.figures,
            "sampled": self.sampled,
            "cause": self.cause.to_json() if self.cause else None,
        }


def _first_answer(gate: Gate) -> str:
    """For a gate about answers, the first one it names (which request, the loop, an excerpt), so a deploy's
    one-line cause shows what the users would have read."""
    if gate.id not in ANSWER_GATES or not gate.detail:
        return ""
    first, *others = gate.detail.split("; request ")
    return f": {first}" + (f" (and {len(others)} more)" if others else "")


def run_smoke(
    client: EngineClient,
    profile: Profile,
    spec: HostSpec,
    previous: Figures | None,
    *,
    baseline: Figures | None = None,
    journal_problems: Sequence[Match] = (),
) -> SmokeResult:
    """Run the gates against the running server. `previous`: the figures of the last verified release of this
    profile; `baseline`: those of the profile's baseline_release, for the speed-up. `journal_problems`:
    signatures from the unit's journal (readiness.unit_problems) to name a failure's cause."""
    figures: SmokeFigures = {}
    gates: list[Gate] = []
    sampled: list[dict[str, Any]] = []
    try:
        server, info = _server_gates(client, profile, spec, figures)
        gates += server + _generation_gates(client, profile, figures)
        gates += _sampled_gates(client, profile, info, figures, gates, sampled)
    except SpecopsError as error:
        gates.append(Gate("api", False, "no answer", "SGLang's HTTP API answers", error.message))
    gates.append(regression_gate(figures, profile, previous))
    gates += [
        gate for gate in (ttft_gate(figures, profile, previous), speedup_gate(figures, profile, baseline)) if gate
    ]
    passed = all(gate.ok for gate in gates)
    cause = None if passed else primary_cause(journal_problems)
    return SmokeResult(passed, gates, figures, cause, list(journal_problems), sampled)


def smoke_line(result: SmokeResult) -> str:
    """One line for the live view and the phase lines: the verdict and the headline figures."""
    figures = result.figures
    parts = []
    if isinstance(figures.get("tokens_per_s"), int | float):
        accept = finite(figures.get("accept_length"))
        parts.append(f"{figures['tokens_per_s']:g} tok/s" + (f", accept {accept:.2f}" if accept is not None else ""))
    if figures.get("sampled_requests"):
        p50, p99 = finite(figures.get("ttft_p50_s")), finite(figures.get("ttft_p99_s"))
        ttft = f"TTFT p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, " if p50 is not None and p99 is not None else ""
        parts.append(f"{figures['sampled_requests']} sampled at temperature {figures.get('sampled_temperature')}: "
                     f"{ttft}{figures.get('sampled_tokens_per_s')} tok/s")  # fmt: skip
    speedup = finite(figures.get("speedup_vs_baseline"))
    if speedup is not None:
        parts.append(f"{speedup:.2f}x release {figures.get('baseline_release')}")
    verdict = "smoke passed" if result.passed else "smoke failed: " + ", ".join(g.id for g in result.failed_gates)
    warned = [gate.id for gate in result.warnings]
    verdict += f" (warning: {', '.join(warned)})" if warned else ""
    return verdict + (" - " + "; ".join(parts) if parts else "")


def with_cause(result: SmokeResult, journal_problems: Sequence[Match]) -> SmokeResult:
    """The same result with the journal's explanation attached (read only after a failure: one round trip)."""
    cause = None if result.passed else primary_cause(journal_problems)
    return replace(result, cause=cause, problems=list(journal_problems))


def _server_gates(
    client: EngineClient, profile: Profile, spec: HostSpec, figures: SmokeFigures
) -> tuple[list[Gate], dict[str, Any]]:
    info = client.server_info()
    states = _as_list(info.get("internal_states")) or [{}]
    figures.update(
        SmokeFigures(
            server_version=info.get("version"),
            speculative_algorithm=info.get("speculative_algorithm"),
            draft_model_path=info.get("speculative_draft_model_path"),
            num_draft_tokens=info.get("speculative_num_draft_tokens"),
            avg_spec_accept_length=states[0].get("avg_spec_accept_length") if isinstance(states[0], dict) else None,
        )
    )
    algorithm = str(info.get("speculative_algorithm"))
    expected = profile.reported_algorithm
    gates = [
        Gate(
            "algorithm",
            algorithm == expected,
            algorithm,
            expected,
            "" if algorithm == expected else "the server runs another algorithm than the profile's",
        )
    ]
    cards = _as_list(client.models().get("data"))
    served = [str(card.get("id")) for card in cards if isinstance(card, dict)]
    figures["served_models"] = served
    if spec.served_model_name:
        ok = spec.served_model_name in served
        gates.append(Gate("served-model", ok, ", ".join(served) or "none", spec.served_model_name))
    return gates, info


def _sampled_gates(
    client: EngineClient, profile: Profile, info: dict[str, Any], figures: SmokeFigures, greedy: list[Gate],
    answers: list[dict[str, Any]],
) -> list[Gate]:  # fmt: skip
    """The concurrent sampled requests, unless the profile sends none or the greedy answer already failed (a
    build that cannot decode greedily needs no sampling to be rejected, and a crawling one would take long)."""
    smoke = profile.smoke
    if smoke.sampled_requests == 0:
        return []
    if not all(gate.ok for gate in greedy if gate.id in ("output", "tokens")):
        return skipped_gates("the greedy request already failed")
    # a server started with --incremental-streaming-output (older: --stream-output) streams only what is new
    incremental = info.get("incremental_streaming_output") is True or info.get("stream_output") is True
    run = run_sampled(client, smoke, incremental=incremental)
    figures.update(run.figures(smoke))
    answers += [answer.to_json() for answer in run.answers]
    return run.gates(smoke)


def _generation_gates(client: EngineClient, profile: Profile, figures: SmokeFigures) -> list[Gate]:
    smoke = profile.smoke
    started = time.monotonic()
    body = client.generate(smoke.prompt, smoke.max_new_tokens, temperature=0.0, ignore_eos=True)
    wall = time.monotonic() - started
    meta = body.get("meta_info")
    meta = meta if isinstance(meta, dict) else {}
    raw_text = body.get("text")
    text = raw_text if isinstance(raw_text, str) else ""
    tokens = int(finite(meta.get("completion_tokens")) or 0)
    latency = finite(meta.get("e2e_latency")) or wall
    tokens_per_s = tokens / latency if latency > 0 else 0.0
    accept = finite(meta.get("spec_accept_length"))
    figures.update(
        SmokeFigures(
            completion_tokens=tokens,
            e2e_latency=round(latency, 4),
            tokens_per_s=round(tokens_per_s, 2),
            accept_length=None if accept is None else round(float(accept), 3),
            spec_verify_ct=meta.get("spec_verify_ct"),
            finish_reason=(meta.get("finish_reason") or {}).get("type")
            if isinstance(meta.get("finish_reason"), dict)
            else meta.get("finish_reason"),
            text_head=text[:TEXT_HEAD_CHARS],
        )
    )
    degenerate = degenerate_reason(text, body.get("output_ids"), loops=False)
    return [
        Gate("tokens", tokens == smoke.max_new_tokens, str(tokens), f"{smoke.max_new_tokens} tokens"),
        Gate(
            "tokens-per-s",
            tokens_per_s >= smoke.min_tokens_per_s,
            f"{tokens_per_s:.1f} tok/s",
            f">= {smoke.min_tokens_per_s:g} tok/s",
        ),
        _accept_gate(None if accept is None else float(accept), smoke.min_accept_length),
        _output_gate(text, degenerate),
    ]


def _output_gate(text: str, degenerate: str) -> Gate:
    """The greedy answer: empty, `!!!!` or one dominant token fail; a repetition loop only warns. Greedy decoding
    of a raw prompt with ignore_eos loops on healthy models too (past the answer's end the most likely next
    words are the ones just written), so a loop there is no verdict; at temperature > 0 it is (sampled-output)."""
    shown = repr(text[:24]) + ("…" if len(text) > 24 else "")
    if degenerate:
        return Gate("output", False, shown, "real text", degenerate)
    loop = loop_reason(text)
    return Gate("output", True, shown, "real text", f"warning: {loop}" if loop else "", warn=bool(loop))


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _accept_gate(accept: float | None, minimum: float) -> Gate:
    if accept is None:
        return Gate(
            "accept-length",
            False,
            "not reported",
            f">= {minimum:g}",
            "meta_info has no spec_accept_length: is speculative decoding on?",
        )
    return Gate("accept-length", accept >= minimum, f"{accept:.2f}", f">= {minimum:g}")
