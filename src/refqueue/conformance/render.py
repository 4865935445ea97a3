"""Print a failing run as a pytest function that replays it.

``render_test`` turns a harness trace (``Step``s, each with the model's
answer and observables) into the source of one self-contained test: it
rebuilds the backend from ``module:factory`` with ``Session.start``, makes
the same calls in the same order, and asserts after each what the model
says.  Run on the backend that failed, it fails at the same step.

For a backend that delivers in any order the test asserts the choices the
backend made in the failing run (the model allowed them), so a backend that
chooses differently on the replay fails on the choice instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from refqueue.conformance.harness import OBSERVABLES, Leased, ModelConfig, Step
from refqueue.conformance.session import CLOCK_START
from refqueue.model.actions import Rejection

__all__ = ["call_text", "render_construction", "render_test", "replay_module"]


def _lit(value: Any) -> str:
    """A Python literal for ``value`` (``math.nan``/``math.inf`` for the odd floats)."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "math.nan"
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


def call_text(step: Step) -> str:
    """The backend call of ``step`` as code (``q`` the queue, ``q1`` its
    second client, ``s`` the session)."""
    text = _call_text(step)
    if step.client and text.startswith("q."):
        return f"q{step.client}{text[1:]}"
    return text


def _call_text(step: Step) -> str:
    op, args = step.op, step.args
    if op == "store_put":
        return f"s.store_put({args[0]!r})"
    if op == "put":
        return f"q.put({args[0]})"
    if op == "try_put":
        if len(args) > 1:  # a backend without abort_when: made only where it enqueues at once
            return f"q.put_blocks_until_below({args[0]})"
        return f"q.put_blocks_until_below({args[0]}, abort_when=lambda: True)"
    if op == "put_wrong":
        return f"q.put({args[0]}.sample_id)" if args[1] == "type" else f"q.put(s.other_store_ref({args[0]}))"
    if op == "stop" and args:  # a backend without acquire_nowait: a drained queue answers at once
        return f"q.acquire(poll_interval={_lit(args[0])})"
    if op in ("acquire", "stop"):
        return "q.acquire_nowait()"
    if op == "idle":
        return "(acquire would wait here: not called)"
    if op == "acquire_wait":
        return f"q.acquire(poll_interval={_lit(args[0])})"
    if op in ("ack", "fail"):
        return f"q.{op}({args[0]})"
    if op == "dead_letter":
        return f"q.dead_letter({args[0]}, {args[1]!r})"
    if op == "extend":
        if args[1] is None:
            return f"q.extend({args[0]})"
        seconds = args[1]
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 < seconds < math.inf:
            return f"q.extend({args[0]}, s.seconds({_lit(seconds)}))"  # longer on a backend's own clock
        return f"q.extend({args[0]}, {_lit(seconds)})"
    if op == "lease_wrong":
        extra = {"extend": ", 1.0", "dead_letter": ", 'poison'"}.get(args[0], "")
        return f"q.{args[0]}('lease'{extra})"
    if op == "copy":
        name, how = args
        return {"copy": f"copy.copy({name})", "deepcopy": f"copy.deepcopy({name})"}.get(
            how, f"type({name}).from_json({name}.to_json())"
        )
    if op == "foreign":
        return "s.foreign_lease()"
    if op == "crash":
        return f"(a consumer crashes holding {args[0]})"
    if op == "producer_crash":
        return f"(a producer dies before putting {args[0]}: its data is an orphan)"
    if op == "collect":
        return f"store.scrub({args[0]})"
    if op == "get":
        return f"store.get({args[0]}.ref)"
    if op == "release":
        return f"store.release({args[0]})"
    if op == "tick":
        return f"clock.advance({_lit(args[0])})"
    if op == "reclaim":
        return "q.reclaim_expired()"
    if op == "close":
        return "q.close()"
    raise ValueError(f"call_text: unknown operation {op!r}")


def _statements(step: Step) -> list[str]:
    call = call_text(step)
    want = step.expect
    if isinstance(want, Rejection):
        return [f"with s.rejects({want.kind!r}):  # the model: {want.message}", f"    {call}"]
    op, result = step.op, step.result
    if op == "store_put":
        return [f"{result} = {call}"]
    if op in ("acquire", "acquire_wait"):
        if want is None:
            return [f"assert {call} is None"]
        assert isinstance(want, Leased)
        return [
            f"{result} = {call}",
            f"s.expect_lease({result}, ref={want.ref}, redelivery_count={want.lease.redelivery_count}, "
            f"deadline={_lit(want.deadline)})",
        ]
    if op in ("ack", "fail", "dead_letter", "extend"):
        return [f"assert {call} is {want!r}"]
    if op == "reclaim":
        return [f"assert {call} == {want!r}"]
    if op == "copy":
        original = step.args[0]
        return [f"{result} = {call}", f"assert {result} == {original} and hash({result}) == hash({original})"]
    if op == "foreign":
        return [f"{result} = {call}"]
    if op == "crash":
        return [f"# a consumer crashes holding {step.args[0]}; the queue is not told"]
    if op == "producer_crash":
        return [f"# a producer dies before putting {step.args[0]}; its data stays in the store (an orphan)"]
    if op == "collect":
        return [f"assert {call} is True  # the orphan's owner collects it"]
    if op == "get":
        n = result[len("handle") :] if result else ""
        sample_id = step.args[1]
        return [
            f"data{n}, {result} = {call}",
            f"s.expect_data(data{n}, {sample_id!r})",
            f"written{n} = s.written[{sample_id!r}]",
        ]
    if op == "release":
        n = step.args[0][len("handle") :]
        return [f"assert {call} is None", f"s.expect_data(data{n}, {step.args[1]!r}, written=written{n})  # still valid (D2)"]
    if op == "tick":
        return [call]
    if op == "idle":
        return ["# nothing is pending: acquire would wait (the backend has no acquire_nowait), so it is not called"]
    return [f"assert {call} is None"]


def _expect_line(obs: Sequence[Any]) -> str:
    values = dict(zip(OBSERVABLES, obs))
    dead = values["dead_letters()"]
    parts = [
        f"pending={values['pending_count()']}",
        f"outstanding={values['outstanding_count()']}",
        f"closed={values['is_closed']}",
        f"drained={values['is_drained']}",
        f"paused={values['is_paused']}",
        f"dead={None if dead is None else list(dead)!r}",
        f"resident_bytes={values['health().resident_bytes']}",
        f"sample_count={values['health().sample_count']}",
        f"high_watermark_hit={values['health().high_watermark_hit']}",
        f"low_watermark_hit={values['health().low_watermark_hit']}",
        f"events={list(values['on_pause/on_resume calls'])!r}",
    ]
    return f"s.expect({', '.join(parts)})"


def render_test(
    trace: Sequence[Step],
    *,
    target: str,
    config: ModelConfig,
    sizes: Mapping[str, int],
    store: Mapping[str, int | None] | None,
    reason: str,
    clock_start: float = CLOCK_START,
    name: str = "test_counterexample",
    header: str = "",
) -> str:
    """The source of a pytest module with one test replaying ``trace``."""
    kwargs = [f"sizes={dict(sizes)!r}"]
    if store:
        kwargs.append(f"store={dict(store)!r}")
    if clock_start != CLOCK_START:
        kwargs.append(f"clock_start={clock_start!r}")
    kwargs += [f"{key}={_lit(value)}" for key, value in config.backend_config().items()]
    body = [
        f"s = Session.start(BACKEND, {', '.join(kwargs)})",
        "q, store, clock = s.queue, s.store, s.clock",
    ]
    for index in sorted({step.client for step in trace} - {0}):
        body.append(f"q{index} = s.client({index})  # another client of the same queue")
    for k, step in enumerate(trace, 1):
        body.append(f"# step {k}")
        body += _statements(step)
        body.append(_expect_line(step.obs))
    return _module(target, reason, header, ["import copy  # noqa: F401", "import math  # noqa: F401"], name, body)


def render_construction(
    *,
    target: str,
    what: str,
    config: ModelConfig,
    store: Mapping[str, int | None],
    model_error: str | None,
    reason: str,
    name: str = "test_counterexample",
) -> str:
    """The source of a pytest module whose test constructs the backend with
    ``config``: it must raise ``TypeError``/``ValueError`` when the model
    rejects the configuration (``model_error``), and succeed otherwise."""
    kwargs = ["sizes={}"]
    if store:
        kwargs.append(f"store={dict(store)!r}")
    kwargs += [f"{key}={_lit(value)}" for key, value in config.backend_config().items()]
    start = f"Session.start(BACKEND, {', '.join(kwargs)})"
    if model_error is not None:
        body = [
            f"# {what}: the model rejects it ({model_error})",
            "with pytest.raises((TypeError, ValueError)):",
            f"    {start}",
        ]
    else:
        body = [f"# {what}: the model accepts it", start]
    return _module(target, reason, "", ["import math  # noqa: F401", "", "import pytest  # noqa: F401"], name, body)


def _module(target: str, reason: str, header: str, imports: list[str], name: str, body: list[str]) -> str:
    """A test module replaying a trace: a docstring saying what failed, the imports, one test function."""
    doc = [f"Counterexample: {target} diverges from the reference model.", "", *reason.splitlines()]
    if header:
        doc += ["", *header.splitlines()]
    return replay_module(
        doc,
        [*imports, "", "from refqueue.conformance.contract import load_backend", "from refqueue.conformance.session import Session"],
        body,
        target=target,
        note=(
            "# Imported here, not in the test: a backend that cannot be imported makes this",
            "# module an error, never a passing test (its ValueError would satisfy pytest.raises).",
        ),
        name=name,
    )


_IMPORT_NOTE = ("# Imported here, not in the test: a backend that cannot be imported is an error, never a pass.",)


def replay_module(
    doc: Sequence[str],
    imports: Sequence[str],
    body: Sequence[str],
    *,
    target: str | None = None,
    note: Sequence[str] = _IMPORT_NOTE,
    constants: Sequence[str] = (),
    name: str = "test_counterexample",
) -> str:
    """The source of a pytest module that replays a failure: every counterexample
    the kit writes has this form.

    ``doc`` is the docstring (its first line the headline; quotes and
    backslashes are escaped here), followed by the line saying how to run it;
    then ``imports``; then, given ``target`` (a ``module:factory``),
    ``BACKEND = load_backend(target)`` under the ``note`` saying why it is
    loaded at import (``imports`` then brings ``load_backend``); then ``constants`` (module-level lines); last one test
    function ``name`` whose lines are ``body`` (indented here).
    """
    doc = [line.replace("\\", "\\\\").replace('"""', "'''") for line in doc]
    lines = [
        '"""' + doc[0],
        *doc[1:],
        "",
        "Replay: python -m pytest <this file>  (from the directory the backend's module imports from)",
        '"""',
        "",
        *imports,
        "",
    ]
    if target is not None:
        lines += [*note, f"BACKEND = load_backend({target!r})", ""]
    lines += [*constants, "", f"def {name}():", *(f"    {line}" for line in body), ""]
    return "\n".join(lines)
