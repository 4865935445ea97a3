"""The ``blocking`` phase's catalogue: each named check, what it checks (the
sentence the certificate prints), the function that runs it and what it needs
of the backend, in the order ``refqueue.conformance.blocking`` runs them.
The checks themselves are in ``blocking_consumers`` (consumers and the
reclaimer), ``blocking_producers`` (producers) and ``blocking_callbacks``
(``on_pause``/``on_resume``).
"""

from __future__ import annotations

from dataclasses import dataclass

from refqueue.conformance import blocking_callbacks as callbacks
from refqueue.conformance import blocking_consumers as consumers
from refqueue.conformance import blocking_producers as producers
from refqueue.conformance.phase import Check

__all__ = ["CHECKS", "NAMED_CHECKS", "Wakeup"]

# The checks that drive the pause and the resume with one-step puts (abort_when=lambda: True)
# need abort_when; the reclaim checks need the injected clock to pass a deadline.
_STEPS = ("abort_when",)
_RECLAIMER = ("reclaimer", "injected_clock")


@dataclass(frozen=True)
class Wakeup(Check):
    """A check that measures a wakeup against the bound (measured again, up to
    ``ATTEMPTS`` times, when it came late); its run returns the latency.  A
    ``randomised`` one makes its waking calls after random offsets and runs
    ``trials`` times (``refqueue.conformance.timing``); the others measure an
    interval and run once."""

    randomised: bool = True


NAMED_CHECKS: tuple[Check, ...] = (
    Wakeup(
        "acquire-woken-by-put",
        "a consumer blocked in acquire(poll_interval=30) is woken by put within the bound",
        consumers.woken_by_put,
    ),
    Wakeup(
        "acquire-woken-by-fail",
        "a consumer blocked in acquire(poll_interval=30) is woken by a live fail within the bound",
        consumers.woken_by_fail,
    ),
    Wakeup(
        "acquire-woken-by-reclaim",
        "a consumer blocked in acquire(poll_interval=30) is woken by reclaim_expired (clock past the deadline) within "
        "the bound",
        consumers.woken_by_reclaim,
        ("injected_clock",),
    ),
    Wakeup(
        "acquire-woken-by-blocking-put",
        "a consumer blocked in acquire(poll_interval=30) is woken within the bound by a put_blocks_until_below that "
        "admits its ref at once",
        consumers.woken_by_blocking_put,
    ),
    Wakeup(
        "acquire-each-woken-by-fails",
        "two consumers blocked in acquire(poll_interval=30) each take one of two refs failed back to back within the "
        "bound",
        consumers.each_woken_by_fails,
    ),
    Wakeup(
        "acquire-each-woken-by-reclaim",
        "two consumers blocked in acquire(poll_interval=30) each take one of the two leases one reclaim_expired takes "
        "back within the bound",
        consumers.each_woken_by_reclaim,
        ("injected_clock",),
    ),
    Wakeup(
        "acquire-woken-by-close",
        "a consumer blocked in acquire(poll_interval=30) returns None within the bound of close() of the empty queue",
        consumers.woken_by_close,
    ),
    Wakeup(
        "acquire-times-out",
        "acquire(poll_interval=4 * bound) on the empty open queue returns None after its interval, within the bound",
        consumers.acquire_times_out,
        randomised=False,  # it measures an interval: no waking call
    ),
    Wakeup(
        "acquire-times-out-busy",
        "acquire(poll_interval=4 * bound) returns None within the bound of its interval while refs are put and taken "
        "back at once (woken, it finds nothing)",
        consumers.acquire_times_out_busy,
        randomised=False,  # it measures an interval: the puts only wake it
    ),
    Wakeup(
        "acquire-woken-by-drain",
        "two consumers blocked in acquire(poll_interval=30) on a closed queue with a lease out return None within the "
        "bound of the ack (and, on a fresh queue, the dead_letter) that drains it",
        consumers.woken_by_drain,
    ),
    Wakeup(
        "acquire-woken-at-the-cap",
        "two consumers blocked in acquire(poll_interval=30) on a closed queue (max_deliveries=1) with a lease out "
        "return None within the bound of the fail, and on a fresh queue the reclaim, that dead-letters it at the cap",
        consumers.drain_woken_at_the_cap,
        ("max_deliveries", "injected_clock"),
    ),
    Wakeup(
        "acquire-each-woken-by-puts",
        "two consumers blocked in acquire(poll_interval=30) each take one of two back-to-back puts within the bound",
        consumers.each_woken_by_puts,
    ),
    Wakeup(
        "acquire-all-woken-by-close",
        "three consumers blocked in acquire(poll_interval=30) all return None within the bound of close() of the empty "
        "queue",
        consumers.all_woken_by_close,
    ),
    Wakeup(
        "put-pauses-and-resumes",
        "put_blocks_until_below without abort_when pauses at high and blocks; the ack that brings residency to low "
        "resumes and admits it within the bound",
        producers.pauses_and_resumes,
    ),
    Wakeup(
        "acquire-woken-by-admission",
        "a consumer blocked in acquire beside a producer paused at high is woken within the bound once the ack that "
        "brings residency to low lets the producer's next step enqueue its ref",
        producers.acquire_woken_by_admission,
    ),
    Wakeup(
        "put-woken-by-dead-letter",
        "the dead_letter that brings residency to low resumes and admits a producer blocked in put_blocks_until_below "
        "within the bound",
        producers.put_woken_by_dead_letter,
        ("dead_letter",),
    ),
    Wakeup(
        "put-all-woken-by-resume",
        "a resume made by another producer's one-step put wakes both producers blocked in "
        "put_blocks_until_below(poll_interval=30) within the bound; both admitted",
        producers.all_woken_by_resume,
        _STEPS,  # the resuming put is one step
    ),
    Wakeup(
        "put-woken-by-close",
        "two producers blocked in put_blocks_until_below raise QueueClosed within the bound of close(); their refs are "
        "not enqueued, nothing stays parked",
        producers.put_woken_by_close,
    ),
    Wakeup(
        "put-abort-when",
        "two blocked producers wait while abort_when() is false (parked_bytes: their refs' bytes) and raise PutAborted "
        "(the other: the exception its abort_when raised) within the bound once it is true; their refs are not "
        "enqueued, nothing stays parked",
        producers.abort_when,
        ("abort_when",),
    ),
    Check(
        "put-inf-no-lost-wakeup",
        "with poll_interval=math.inf, an ack, dead_letter, resume or close made after a producer's pausing step and "
        "before its wait (inside its abort_when) still wakes it: admitted, or QueueClosed",
        producers.lost_wakeup_in_window,
        ("abort_when",),
    ),
    Check(
        "callbacks-outside-locks",
        "inside on_pause and on_resume another thread's pending_count(), outstanding_count(), is_paused and "
        "store.health() return: no lock is held",
        callbacks.callbacks_outside_locks,
        _STEPS,
    ),
    Check(
        "callbacks-in-order",
        "with on_resume held open, another producer's pause does not call on_pause until on_resume returned; the calls "
        "are pause, resume, pause",
        callbacks.callbacks_in_order,
        _STEPS,
    ),
    Check(
        "callback-errors-propagate",
        "an exception of on_pause/on_resume reaches the caller of put_blocks_until_below; the transition committed",
        callbacks.callback_errors_propagate,
        _STEPS,
    ),
    Check(
        "callback-interrupted",
        "on_pause raising KeyboardInterrupt reaches the caller of put_blocks_until_below, and the next change is "
        "still reported: on_resume is called",
        callbacks.callback_interrupt,
        _STEPS,
    ),
    Check(
        "callbacks-after-an-error",
        "with on_pause held open and then raising, another producer's resume is still reported: on_resume once, "
        "at the latest by the next step",
        callbacks.callbacks_after_an_error,
        _STEPS,
    ),
    Check(
        "reclaimer-reclaims",
        f"start_reclaimer({consumers.RECLAIMER_INTERVAL}) reclaims an expired lease within "
        f"{consumers.RECLAIM_WITHIN} intervals with nobody calling reclaim_expired",
        consumers.reclaimer_reclaims,
        _RECLAIMER,
    ),
    Check(
        "reclaimer-after-close",
        f"close() with a lease outstanding leaves the reclaimer running: the lease is reclaimed within "
        f"{consumers.RECLAIM_WITHIN} intervals of its deadline passing, and the closed queue drains",
        consumers.reclaimer_after_close,
        _RECLAIMER,
    ),
    Check(
        "reclaimer-stops",
        f"after stop_reclaimer() nothing is reclaimed for {consumers.STOPPED_FOR} intervals (a bounded wait for what "
        f"must not happen), then reclaim_expired() by hand finds the lease due",
        consumers.reclaimer_stops,
        _RECLAIMER,
    ),
    Check(
        "reclaimer-default-interval",
        f"start_reclaimer() with no interval (visibility timeout {consumers.DEFAULT_VISIBILITY} s) reclaims an expired "
        f"lease within a quarter of the timeout (+ {consumers.DEFAULT_SLACK} s), twice",
        consumers.reclaimer_default_interval,
        _RECLAIMER,
    ),
)
CHECKS = tuple(c.name for c in NAMED_CHECKS)
