"""Every action preserves every invariant, on small states: a CrossHair target.

``replay(script)`` runs the model's actions from the initial state, one per
int of ``script`` (an int picks the action and its argument from a fixed
menu over two samples), on a small configuration with every feature on
(watermarks, ``max_deliveries``, a dedup window; the in-process ack, with
lossy restarts and the operator's recovery, D9), and returns the names of
the invariants (state and transition, ``refqueue.model.invariants``) that
any step broke.  ``invariants_hold`` states as a contract that the list is
empty for every script of up to 8 steps; CrossHair (``scripts/crosshair.sh``)
explores the scripts symbolically, and the tests replay random ones.

Pure: no clock, no threads, no production code.
"""

from __future__ import annotations

from refqueue.model import actions
from refqueue.model.invariants import TRANSITION_INVARIANTS, violated
from refqueue.model.state import STORED, Config, State, initial_state, make_config

__all__ = ["CONFIG", "MENU", "SAMPLES", "invariants_hold", "replay"]

CONFIG: Config = make_config(
    visibility_timeout=2.0,
    high_watermark_bytes=3,
    low_watermark_bytes=1,
    max_deliveries=2,
    dedup_window=1,
)
SAMPLES = ("a", "b")
NBYTES = {"a": 1, "b": 2}
MENU = ("store_put", "put", "put_step", "acquire", "ack", "fail", "dead_letter", "extend", "reclaim_expired",
        "tick", "close", "restart_lossy", "recover")
# The TLA+ action names the transition invariants know the steps by.
SPEC_NAME = {"store_put": "StorePut", "put": "Put", "put_step": "TryPut", "acquire": "Acquire", "ack": "Ack",
             "fail": "Fail", "dead_letter": "DeadLetter", "extend": "Extend", "reclaim_expired": "ReclaimExpired",
             "tick": "Tick", "close": "Close", "restart_lossy": "RestartLossy", "recover": "Recover"}


def _step(cfg: Config, state: State, leases: list, name: str, pick: int) -> tuple[State, object, object]:
    """One action of the menu; returns ``(state after, arg, value)``."""
    sample_id = SAMPLES[pick % len(SAMPLES)]
    if name == "store_put":
        out = actions.store_put(cfg, state, sample_id, NBYTES[sample_id])
        return out.state, sample_id, out.value
    if name in ("put", "put_step"):
        rec = actions.rec_of(state, sample_id)
        if rec is None or rec.status != STORED:
            return state, sample_id, None  # a producer puts only what it stored (as the world's do)
    if name == "put":
        out = actions.put(cfg, state, sample_id)
        return out.state, sample_id, out.value
    if name == "put_step":
        out = actions.put_step(cfg, state, sample_id, NBYTES[sample_id])
        return out.state, sample_id, out.value
    if name == "acquire":
        out = actions.acquire(cfg, state)
        if out.value is not None:
            leases.append(out.value)
        return out.state, None, out.value
    if name in ("ack", "fail", "dead_letter", "extend"):
        if not leases:
            return state, None, None
        lease = leases[pick % len(leases)]
        if name == "dead_letter":
            out = actions.dead_letter(cfg, state, lease, "poison")
        elif name == "extend":
            out = actions.extend(cfg, state, lease, cfg.visibility_timeout)
        else:
            out = getattr(actions, name)(cfg, state, lease)
        return out.state, lease, out.value
    if name == "reclaim_expired":
        out = actions.reclaim_expired(cfg, state)
        return out.state, None, out.value
    if name == "tick":
        out = actions.tick(cfg, state, 1.5)
        return out.state, None, out.value
    if name == "restart_lossy":  # a lossy restart of an open queue (D9)
        out = actions.restart_lossy(cfg, state) if not state.closed else actions.Outcome(state, None, None)
        return out.state, None, out.value
    if name == "recover":
        out = actions.recover(cfg, state, sample_id)
        return out.state, sample_id, out.value
    out = actions.close(cfg, state)
    return out.state, None, out.value


def replay(script: list[int], cfg: Config = CONFIG) -> list[str]:
    """The invariants broken by running ``script`` (empty: all held).

    Each int ``k`` picks the action ``MENU[k % len(MENU)]`` and, with
    ``k // len(MENU)``, its sample (for puts) or lease (for ack, fail,
    dead_letter, extend: one of those acquired so far, live or stale).  As
    the world's producers do, a sample is put only once its data is stored
    (a put of anything else is skipped, a step that changes nothing).
    """
    state = initial_state()
    leases: list = []
    broken: list[str] = []
    for k in script:
        name = MENU[k % len(MENU)]
        before = state
        state, arg, value = _step(cfg, state, leases, name, k // len(MENU))
        broken += violated(cfg, state)
        spec_name = SPEC_NAME[name]
        broken += [n for n, holds in TRANSITION_INVARIANTS.items() if not holds(cfg, before, state, spec_name, arg, value)]
        if broken:
            return broken
    return broken


def invariants_hold(script: list[int]) -> bool:
    """Every action preserves every state and transition invariant.

    pre: len(script) <= 8
    pre: all(0 <= k < 4 * len(MENU) for k in script)
    post: __return__
    """
    return not replay(script)
