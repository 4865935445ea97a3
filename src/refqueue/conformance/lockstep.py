"""The Hypothesis state machine that runs a backend in lockstep with the model.

``lockstep_machine(backend, stats)`` builds a ``RuleBasedStateMachine`` whose
rules are the operations of ``Harness``: puts of fresh, duplicate, closed,
re-put and replayed ids; one-step blocking puts; acquires; ack, fail, extend
and dead-letter of live *and stale* leases, of copies and JSON round trips,
and of a foreign queue's leases; argument errors; ticks across deadlines;
reclaim; close; store get and release by live and stale holders.  Each
example starts from a drawn configuration (visibility timeout, watermark
overrides, ``max_deliveries``, ``dedup_window`` as the backend's
capabilities allow) and a drawn default store (bare, or capped with its own
watermarks).

Which lease an operation uses is drawn as an index counted from the newest,
so a rule still means something when earlier rules are removed: that is what
lets ``minimize`` shorten a failing example by deleting rules.

Hypothesis generates; it does not shrink here (its stateful shrinker costs
tens of seconds per bug).  ``run_lockstep`` instead replays the failing
example's rules through a fresh backend and deletes rules while it still
fails (``refqueue.conformance.shrink``), which takes well under a second.

The ``lockstep`` phase (``PHASE``) runs it with the profile's examples and
rules per example and reports the model states reached and the operations
made and never made; a failure's replay is the shrunk run, call by call.
Imports: ``harness``, ``shrink``, ``samples``, ``render`` (through
``phase.harness_failure``).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from refqueue.conformance.contract import Backend
from refqueue.conformance.harness import Failure, Harness, ModelConfig
from refqueue.conformance.phase import Context, PhaseBase, PhaseResult, harness_failure, timed
from refqueue.conformance.samples import LOCKSTEP_SIZES, default_limits, model_limits
from refqueue.conformance.shrink import shrink
from refqueue.model.state import make_config

__all__ = ["LOCKSTEP_OPS", "PHASE", "RunStats", "STORES", "lockstep_machine", "lockstep_settings", "replay", "run_lockstep"]

# The default stores an example may run against, in units (ignored when the
# backend brings its own make_store).
STORES: Mapping[str, Mapping[str, int | None]] = {
    "bare": {},
    "capped": {"capacity": 10, "max_samples": 5, "high": 6, "low": 2},
}

try:
    settings.get_profile("deep")
except InvalidArgument:  # not registered yet: the same values as tests/conftest.py
    settings.register_profile(
        "deep", max_examples=2000, stateful_step_count=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )

Call = tuple[str, dict[str, Any]]  # a rule that ran: its name and arguments


@dataclass
class RunStats:
    """Counters of a lockstep run."""

    examples: int = 0
    steps: int = 0
    steps_to_failure: int | None = None  # steps run when the first failure showed
    failure: Failure | None = None
    calls: list[Call] = field(default_factory=list)  # the rules of the failing example
    pair: Any = None  # the failing example's (config, store)
    ops: dict[str, int] = field(default_factory=dict)  # operation -> times run
    states: set[Any] = field(default_factory=set)  # distinct model states reached
    on_example: Callable[[RunStats], None] | None = None

    def count(self, harness: Harness, start: int) -> None:
        """Count the steps ``harness`` took since its trace had ``start`` steps."""
        trace = harness.trace
        self.steps += len(trace) - start
        for step in trace[start:]:
            self.ops[step.op] = self.ops.get(step.op, 0) + 1
        self.states.add(harness.state)


def _configs(backend: Backend) -> st.SearchStrategy[tuple[ModelConfig, Mapping[str, int | None]]]:
    """Valid (queue config, default store config) pairs for ``backend``: watermark
    overrides none, both, or one of them over the store's own (D4's mixed pairs)."""
    caps = backend.capabilities
    own_limits = None
    if backend.make_store is not None:
        probe = backend.make_store()
        own_limits = model_limits(probe)
        probe.close()
    timeouts = [1.0, 2.5, 10.0] if caps.injected_clock else [3600.0]

    @st.composite
    def pairs(draw: Callable[..., Any]) -> tuple[ModelConfig, Mapping[str, int | None]]:
        store_config = STORES["bare" if own_limits is not None else draw(st.sampled_from(sorted(STORES)))]
        mode = draw(st.sampled_from(["none", "both", "both", "high", "low"]))
        # A band at least two units wide: with a narrower one no residency lies
        # strictly inside it, and a queue without hysteresis would look right.
        # Low watermarks are likelier: a run reaches them in fewer steps.
        high = draw(st.sampled_from([2, 2, 3, 3, 4, 6]))
        low = draw(st.integers(0, high - 2))
        config = ModelConfig(
            visibility_timeout=draw(st.sampled_from(timeouts)),
            high=high if mode in ("both", "high") else None,
            low=low if mode in ("both", "low") else None,
            max_deliveries=draw(st.one_of(st.none(), st.integers(1, 3))) if caps.max_deliveries else None,
            dedup_window=draw(st.one_of(st.none(), st.integers(0, 2))) if caps.dedup_window else None,
        )
        limits = own_limits if own_limits is not None else default_limits(**store_config)
        try:
            make_config(
                visibility_timeout=config.visibility_timeout,
                high_watermark_bytes=config.high,
                low_watermark_bytes=config.low,
                **limits,
            )
        except ValueError:
            # Not a pair over this store: no overrides, which every store accepts.
            config = config._replace(high=None, low=None)
        return config, store_config

    return pairs()


def lockstep_settings(*, hypothesis_profile: str, examples: int, steps_per_example: int) -> settings:
    """Hypothesis settings: ``hypothesis_profile`` (``ci``, ``deep``, ...) with
    the kit's counts, no database, no shrinking, nothing printed."""
    return settings(
        settings.get_profile(hypothesis_profile),
        max_examples=examples,
        stateful_step_count=steps_per_example,
        deadline=None,
        database=None,
        derandomize=False,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        phases=[Phase.explicit, Phase.generate],
    )


_INDEXES = 8  # which lease/handle/ref an operation uses: 0 is the newest
_INDEX = st.integers(0, _INDEXES - 1)


def _combined(*options: list[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    """One integer draw decoded into one item of each list (index 0 of each for 0).

    A rule's arguments cost one draw instead of one each: Hypothesis's draws
    dominate the cost of a lockstep step.
    """
    sizes = [len(o) for o in options]
    total = 1
    for n in sizes:
        total *= n

    def decode(code: int) -> tuple[Any, ...]:
        items = []
        for values, n in zip(options, sizes):
            code, k = divmod(code, n)
            items.append(values[k])
        return tuple(items)

    return st.integers(0, total - 1).map(decode)


# Which rules need what.  These are *not* Hypothesis preconditions: whether a
# lease or handle exists depends on the backend's choices (a backend that
# delivers in any order may choose differently when Hypothesis runs an example
# again), and a precondition that answers differently on a re-run ends the run
# in FlakyStrategyDefinition.  Every rule is always enabled and draws the same
# arguments; one whose need is unmet acquires instead (``_fallback``).
_REQUIRES: dict[str, Callable[[Harness], Any]] = {
    "settle": lambda h: h.own_leases,
    "copy_lease": lambda h: h.own_leases,
    "get": lambda h: h.own_leases,
    "release": lambda h: h.handle_names,
}


def _recorded(fn: Callable[..., None]) -> Callable[..., None]:
    """Record each call of a rule (name, arguments) on the machine, for ``replay``."""

    @functools.wraps(fn)
    def wrapper(self: Any, **kwargs: Any) -> None:
        self.calls.append((fn.__name__, kwargs))
        fn(self, **kwargs)

    return wrapper


def lockstep_machine(backend: Backend, stats: RunStats) -> type[RuleBasedStateMachine]:
    """The state machine class for ``backend``; see the module docstring.

    Hypothesis picks among enabled rules uniformly, so related operations
    share a rule and a drawn choice weights them (repeated entries): the
    argument errors and ``close`` are rarer than the calls that move samples.
    A rule draws all its arguments as one integer (``_combined``).
    """
    caps = backend.capabilities
    sizes = dict(LOCKSTEP_SIZES)
    configs = _configs(backend)
    produce_moves = ["store_put+put", "store_put+try_put", "store_put", "put", "put", "try_put", "try_put", "type", "uri"]
    settle_calls = ["ack", "ack", "fail", "fail", "not_a_lease"]
    if caps.extend:
        settle_calls += ["extend", "extend"]
    if caps.dead_letter:
        settle_calls += ["dead_letter"]
    lease_calls = [c for c in ("ack", "fail", "extend", "dead_letter") if c in settle_calls]
    extend_seconds = [None, None, 0.5, 1.0, 3.0, 0.0, -1.0, math.nan, math.inf]
    env_moves = ["reclaim", "reclaim", "reclaim", "close"]
    if caps.injected_clock:
        env_moves += ["tick 0.5", "tick 1", "tick 1", "tick 2.5"]

    def pick(names: list[str], i: int) -> str:
        return names[-1 - i % len(names)]

    copy_hows = ["copy", "deepcopy", "json"] if caps.lease_json else ["copy", "deepcopy"]

    class Lockstep(RuleBasedStateMachine):
        """One backend instance against the model (built by ``lockstep_machine``)."""

        def __init__(self) -> None:
            super().__init__()
            self.h: Harness | None = None
            self.pair: Any = None
            self.calls: list[Call] = []
            stats.examples += 1
            if stats.on_example is not None:
                stats.on_example(stats)

        def _do(self, op: Callable[..., Any], *args: Any) -> Any:
            h = self.h
            assert h is not None
            start = len(h.trace)
            failure = None
            try:
                return op(*args)
            except Exception as exc:
                failure = h.failure(exc)
                raise
            finally:
                stats.count(h, start)
                if failure is not None:
                    if stats.steps_to_failure is None:
                        stats.steps_to_failure = stats.steps
                    stats.failure, stats.calls, stats.pair = failure, list(self.calls), self.pair

        @initialize(pair=configs)
        def start(self, pair: tuple[ModelConfig, Mapping[str, int | None]]) -> None:
            config, store = pair
            self.pair = pair
            try:
                self.h = Harness(backend, config, sizes=sizes, store=store)
            except Exception as exc:
                # The factory refused (or broke on) a configuration the model accepts.
                stats.failure, stats.calls, stats.pair = Failure([], config, store, sizes, exc), [], pair
                if stats.steps_to_failure is None:
                    stats.steps_to_failure = stats.steps
                raise

        def _fallback(self, name: str) -> bool:
            """When rule ``name``'s need is unmet, acquire instead; whether it was unmet."""
            if _REQUIRES[name](self.h):
                return False
            self._do(self.h.acquire)
            return True

        def teardown(self) -> None:
            if self.h is not None:
                self.h.dispose()

        # -- the producer --

        @rule(args=_combined(sorted(sizes), produce_moves))
        @_recorded
        def produce(self, args: tuple[str, str]) -> None:
            """store.put, then put or one blocking-put step (or either of an earlier ref:
            a duplicate, a re-put after ack, a replay; or a put the queue must refuse)."""
            sample_id, how = args
            h = self.h
            if how.startswith("store_put") or sample_id not in h.latest_ref:
                if self._do(h.store_put, sample_id) is None or how in ("store_put", "type", "uri"):
                    return
                how = how.rpartition("+")[2]
            name = h.latest_ref[sample_id]
            if how == "put" or (how == "try_put" and not caps.abort_when and not h.try_put_enqueues(name)):
                self._do(h.put, name)  # without abort_when a blocking put that would wait is not made
            elif how == "try_put":
                self._do(h.try_put, name)
            else:
                self._do(h.put_wrong, name, how)

        # -- the consumer --

        @rule(how=st.sampled_from(["nowait", "nowait", "nowait", "wait", 0.0, -1.0, math.nan]))
        @_recorded
        def acquire(self, how: str | float) -> None:
            if isinstance(how, float):
                self._do(self.h.acquire_wait, how)
            elif how == "wait" and self.h.acquire_returns_at_once():
                self._do(self.h.acquire_wait, 0.001)
            else:
                self._do(self.h.acquire)

        @rule(args=_combined(list(range(_INDEXES)), settle_calls, extend_seconds))
        @_recorded
        def settle(self, args: tuple[int, str, float | None]) -> None:
            """ack/fail/extend/dead_letter of a live or stale lease (or of no lease at all)."""
            i, call, seconds = args
            h = self.h
            if self._fallback("settle"):
                return
            name = pick(h.own_leases, i)
            if call == "not_a_lease":
                self._do(h.lease_wrong, lease_calls[i % len(lease_calls)])
            elif call == "extend":
                self._do(h.extend, name, seconds)
            elif call == "dead_letter":
                self._do(h.dead_letter, name, "" if seconds == 0.0 else "poison")
            else:
                self._do(getattr(h, call), name)

        @rule(call=st.sampled_from(lease_calls))
        @_recorded
        def settle_foreign(self, call: str) -> None:
            """A lease of a second queue from the same factory: ForeignLease."""
            h = self.h
            name = h.foreign_leases[-1] if h.foreign_leases else self._do(h.foreign)
            if call == "extend":
                self._do(h.extend, name, 1.0)
            elif call == "dead_letter":
                self._do(h.dead_letter, name, "poison")
            else:
                self._do(getattr(h, call), name)

        @rule(args=_combined(list(range(_INDEXES)), copy_hows))
        @_recorded
        def copy_lease(self, args: tuple[int, str]) -> None:
            i, how = args
            if self._fallback("copy_lease"):
                return
            self._do(self.h.copy, pick(self.h.own_leases, i), how)

        @rule(i=_INDEX)
        @_recorded
        def get(self, i: int) -> None:
            if self._fallback("get"):
                return
            self._do(self.h.get, pick(self.h.own_leases, i))

        @rule(i=_INDEX)
        @_recorded
        def release(self, i: int) -> None:
            if self._fallback("release"):
                return
            self._do(self.h.release, pick(self.h.handle_names, i))

        # -- the environment --

        @rule(what=st.sampled_from(env_moves))
        @_recorded
        def environment(self, what: str) -> None:
            if what == "reclaim":
                self._do(self.h.reclaim)
            elif what == "close":
                self._do(self.h.close)
            else:
                self._do(self.h.tick, float(what.split()[1]))

    Lockstep.__name__ = Lockstep.__qualname__ = f"Lockstep[{backend.target}]"
    return Lockstep


def replay(backend: Backend, pair: Any, calls: list[Call]) -> Failure | None:
    """Run ``calls`` (rules and arguments) on a fresh backend; the failure, or
    None if it passes.  A rule whose precondition does not hold is skipped."""
    stats = RunStats()
    machine = lockstep_machine(backend, stats)()
    try:
        machine.start(pair=pair)
        for name, kwargs in calls:
            getattr(machine, name)(**kwargs)
    except Exception:  # noqa: BLE001 - recorded in stats by the rule that failed
        pass
    finally:
        machine.teardown()
    return stats.failure


def run_lockstep(
    backend: Backend,
    *,
    hypothesis_profile: str,
    examples: int,
    steps_per_example: int,
    seed_value: int,
    on_example: Callable[[RunStats], None] | None = None,
) -> RunStats:
    """Run the state machine; on a failure, ``stats.failure`` is the minimized run."""
    stats = RunStats(on_example=on_example)
    machine = seed(seed_value)(lockstep_machine(backend, stats))
    try:
        run_state_machine_as_test(
            machine,
            settings=lockstep_settings(
                hypothesis_profile=hypothesis_profile, examples=examples, steps_per_example=steps_per_example
            ),
        )
    except Exception as exc:  # noqa: BLE001 - a failure is reported through stats
        if stats.failure is None:
            raise RuntimeError(f"the lockstep run of {backend.target} failed outside any step: {exc}") from exc
    if stats.failure is not None:
        pair = stats.pair
        stats.failure = shrink(stats.calls, lambda calls: replay(backend, pair, calls), stats.failure)
    return stats


# -- the lockstep phase --------------------------------------------------------------------

# Every operation the lockstep machine can make (the certificate lists those never made).
LOCKSTEP_OPS = (
    "store_put", "put", "try_put", "put_wrong", "acquire", "acquire_wait", "ack", "fail", "dead_letter",
    "extend", "lease_wrong", "copy", "foreign", "get", "release", "tick", "reclaim", "close",
)  # fmt: skip


class LockstepPhase(PhaseBase):
    """The ``lockstep`` phase: ``run_lockstep`` with the profile's examples and
    rules per example; reports the model states reached and the operations
    made and never made."""

    name = "lockstep"

    def model_units(self, capabilities: Any) -> int:
        return sum(LOCKSTEP_SIZES.values())

    def run(self, context: Context) -> PhaseResult:
        profile, bar = context.profile, context.progress
        bar.start("lockstep", profile.examples)
        started = time.perf_counter()
        stats = run_lockstep(
            context.backend,
            hypothesis_profile=profile.hypothesis_profile,
            examples=profile.examples,
            steps_per_example=context.steps or profile.steps_per_example,
            seed_value=context.seed,
            on_example=lambda s: bar.update(s.examples, f"examples · {s.steps:,} steps"),
        )
        seconds = time.perf_counter() - started
        result = PhaseResult(timed(stats.steps, seconds, examples=stats.examples))
        result.coverage["lockstep"] = {
            "model_states": len(stats.states),
            "made": dict(sorted(stats.ops.items(), key=lambda kv: -kv[1])),
            "never_made": [op for op in LOCKSTEP_OPS if op not in stats.ops],
        }
        if stats.failure is not None:
            result.failure, result.replay = harness_failure(context, "lockstep", stats.failure, stats.steps_to_failure)
        return result

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        rate = f", {entry['steps_per_second']:,} steps/s" if entry.get("steps_per_second") else ""
        return [f"  {name:<13} {entry['examples']:,} examples, {entry['steps']:,} steps, {entry['seconds']} s{rate}"]

    def coverage_summary(self, coverage: Mapping[str, Any]) -> list[str]:
        ops = coverage.get("lockstep")
        if not ops:
            return []
        made = len(ops["made"])
        return [
            f"  {'':<13} lockstep: {made}/{made + len(ops['never_made'])} operations "
            f"(never made: {', '.join(ops['never_made']) or 'none'}), {ops['model_states']:,} model states"
        ]

    def coverage_markdown(self, coverage: Mapping[str, Any]) -> list[str]:
        ops = coverage.get("lockstep")
        if not ops:
            return []
        return [
            "",
            "## Lockstep operations",
            "",
            f"- distinct model states reached: {ops['model_states']:,}",
            f"- never made: {', '.join(ops['never_made']) or 'none'}",
            "- made: " + ", ".join(f"{k} {v:,}" for k, v in ops["made"].items()),
        ]


PHASE = LockstepPhase()
