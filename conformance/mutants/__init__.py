"""Deliberately broken backends: each breaks one rule of docs/API.md in the
way a real implementation might, and the conformance kit must reject it.

``_base.py`` is a small, plainly correct backend the kit certifies; each
other module subclasses it (or, for ``release_scrubs`` and ``orphan_limit``,
breaks its store)
and exposes ``make``, so ``refqueue certify conformance.mutants.<name>:make``
exits 1.  ``MUTANTS`` lists them; ``python -m conformance.mutants`` certifies
each and writes the table of how many steps each took to be caught.

``CAUGHT_BY`` names, for each mutant, the phase that rejects it first in a
whole ci certification (measured with ``python -m conformance.mutants``): the
test suite certifies each mutant with that phase alone, and the tests marked
slow with every phase, checking that the whole run stops in that phase.
``NAMED_CHECK`` names, for the mutants of the blocking and calls phases, the
check that rejects each and a part of what it says; ``REPEATS`` the mutants
whose rejection repeats another's (the tests certify them under the slow mark);
``ALSO_CAUGHT`` the mutants a later phase catches too where no other mutant
shows that phase or check failing (the tests certify each with it alone).
"""

from pathlib import Path

MUTANTS = tuple(sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("_")))

# The first phase of a whole ci certification (seed 0) that rejects each mutant.
CAUGHT_BY = {
    'abort_raise_stays_parked': 'calls',
    'ack_before_scrub': 'calls',
    'ack_keeps_data': 'calls',
    'acquire_clock_loses': 'calls',
    'acquire_default_poll_1s': 'calls',
    'acquire_interrupt_loses': 'calls',
    'acquire_poll_rounded_up': 'calls',
    'acquire_polls_100ms': 'blocking',
    'acquire_polls_200ms': 'blocking',
    'acquire_polls_60ms': 'blocking',
    'acquire_race': 'producers',
    'acquire_timer_restarts': 'blocking',
    'admission_no_wake': 'blocking',
    'backpressure_needs_abort_when': 'blocking',
    'blocking_put_no_wake': 'blocking',
    'callback_health_at_delivery': 'calls',
    'callback_interrupt_sticks': 'blocking',
    'callback_swallowed': 'blocking',
    'callback_under_lock': 'blocking',
    'callbacks_dropped_on_error': 'blocking',
    'callbacks_overlap': 'blocking',
    'cap_dead_letter_no_wake': 'blocking',
    'close_drops_pending': 'calls',
    'close_ignored_by_producer': 'blocking',
    'close_no_wake': 'blocking',
    'close_raises_reclaimer_error': 'calls',
    'close_stops_reclaimer': 'calls',
    'close_wakes_one': 'blocking',
    'close_wakes_one_producer': 'blocking',
    'close_wakes_with_none': 'blocking',
    'closed_leaves_parked': 'blocking',
    'copy_not_acking': 'calls',
    'counts_unlocked': 'calls',
    'dead_letter_drain_no_wake': 'blocking',
    'dead_letter_late': 'calls',
    'dead_letter_limit_drops_newest': 'calls',
    'dead_letter_limit_int32': 'construction',
    'dead_letter_limit_zero_keeps_all': 'calls',
    'dead_letter_mutable': 'calls',
    'dead_letter_no_room_wake': 'blocking',
    'dead_letter_reason_any': 'calls',
    'dead_letter_reason_surrogate': 'calls',
    'dead_letter_reason_trimmed': 'calls',
    'dead_letter_room_before_scrub': 'calls',
    'dead_letters_cap_100': 'calls',
    'dead_letters_own_list': 'calls',
    'dead_letters_sorted': 'calls',
    'deadline_heap_1000': 'calls',
    'deadline_settle_before_count': 'calls',
    'dedup_before_scrub': 'calls',
    'dedup_casefold': 'calls',
    'dedup_forever': 'calls',
    'dedup_joined': 'calls',
    'dedup_short': 'calls',
    'dedup_window_capped': 'calls',
    'drain_keeps_list': 'calls',
    'drain_no_wake': 'blocking',
    'drain_torn': 'calls',
    'duplicate_put': 'calls',
    'early_terminal_none': 'walks',
    'epoch_empty_accepted': 'calls',
    'epoch_from_id': 'calls',
    'extend_from_deadline': 'calls',
    'extend_stale': 'walks',
    'extend_unbounded': 'calls',
    'extend_unlocked': 'calls',
    'fail_no_wake': 'blocking',
    'fail_to_head': 'calls',
    'fail_uncounted': 'calls',
    'foreign_accepted': 'calls',
    'health_fails_open': 'calls',
    'health_torn': 'threads',
    'inf_by_identity': 'calls',
    'interrupt_stays_parked': 'blocking',
    'json_drops_redelivery': 'calls',
    'lease_default_timeout': 'calls',
    'lease_id_bool': 'calls',
    'lease_id_negative_stale': 'calls',
    'lease_ids_16bit': 'calls',
    'lease_ids_from_0': 'calls',
    'lease_json_bytes_latin1': 'calls',
    'lease_json_ms_deadline': 'calls',
    'lease_json_no_bytes': 'calls',
    'lease_recycled': 'calls',
    'no_band': 'threads',
    'old_backpressure': 'calls',
    'orphan_limit': 'calls',
    'park_before_abort_when': 'calls',
    'parked_bytes_count': 'blocking',
    'pause_every_step': 'blocking',
    'pause_flag_race': 'threads',
    'pending_capped': 'calls',
    'pending_counts_parked': 'blocking',
    'pending_lifo': 'calls',
    'put_duplicate_race': 'calls',
    'put_lost_wakeup': 'blocking',
    'put_no_wake': 'blocking',
    'put_poll_zero': 'calls',
    'put_wakes_if_empty': 'blocking',
    'reclaim_batch_1000': 'calls',
    'reclaim_by_id': 'walks',
    'reclaim_early': 'calls',
    'reclaim_ms_rounded': 'calls',
    'reclaim_nan_takes_all': 'calls',
    'reclaim_no_wake': 'blocking',
    'reclaim_scrub_swallowed': 'calls',
    'reclaim_snapshot': 'threads',
    'reclaim_strict': 'calls',
    'reclaim_wakes_one': 'blocking',
    'reclaimer_default_interval': 'blocking',
    'reclaimer_error_lost': 'calls',
    'reclaimer_error_sticky': 'calls',
    'reclaimer_holds_queue': 'calls',
    'reclaimer_idle': 'calls',
    'reclaimer_interval_zero': 'calls',
    'reclaimer_missing': 'calls',
    'reclaimer_outlives_drain': 'calls',
    'reclaimer_start_race': 'calls',
    'reclaimer_unstoppable': 'calls',
    'redis_client_clock': 'calls',
    'redis_close_per_client': 'faults',
    'redis_dedup_per_client': 'calls',
    'redis_guard_epoch_only': 'faults',
    'redis_lease_ids_per_client': 'calls',
    'redis_loss_undetected': 'faults',
    'redis_metrics_unguarded': 'faults',
    'redis_no_intent': 'faults',
    'redis_put_retry_last_only': 'faults',
    'redis_reclaim_dead_no_intent': 'faults',
    'redis_reclaimer_dies': 'faults',
    'redis_reclaimer_dies_refused': 'faults',
    'redis_reclaimer_gives_up': 'faults',
    'redis_unfenced_ack': 'calls',
    'redis_unfenced_after_restart': 'faults',
    'ref_versions_as_text': 'calls',
    'release_scrubs': 'walks',
    'requeue_wakes_if_empty': 'blocking',
    'resume_wakes_one': 'blocking',
    'ring_wrap': 'calls',
    'same_epoch': 'calls',
    'sample_ids_casefold': 'calls',
    'seconds_overflow': 'calls',
    'stale_ack': 'calls',
    'steps_skip_duplicate': 'calls',
    'uri_scheme_only': 'calls',
    'with_closes_store': 'calls',
    'with_error_keeps_open': 'calls',
    'with_starts_reclaimer': 'calls',
}

# The check of its phase (CAUGHT_BY: blocking or calls) that rejects each of these
# mutants, and what its failure says (a part of the message): the phase stops at
# that check, so no check before it caught the mutant by chance.
NAMED_CHECK = {
    # the blocking phase
    "put_no_wake": ("acquire-woken-by-put", "acquire(poll_interval=30.0) was still blocked 1.0 s after put('w0') returned (bound 0.05 s;"),
    "fail_no_wake": ("acquire-woken-by-fail", "was still blocked 1.0 s after fail(lease of 'w0') returned"),
    "blocking_put_no_wake": ("acquire-woken-by-blocking-put", "was still blocked 1.0 s after put_blocks_until_below('w0', poll_interval=30.0) (nothing paused: admitted at once) returned"),
    "requeue_wakes_if_empty": ("acquire-each-woken-by-fails", "was still blocked 1.0 s after fail(lease of 'w0') then fail(lease of 'w1') returned"),
    "reclaim_wakes_one": ("acquire-each-woken-by-reclaim", "was still blocked 1.0 s after reclaim_expired() of two leases returned"),
    "interrupt_stays_parked": ("put-abort-when", "the blocked producers raised (one PutAborted, one the KeyboardInterrupt its abort_when raised), but parked_bytes is 18, not 0"),
    "pending_counts_parked": ("put-abort-when", "two producers are blocked in put_blocks_until_below, their refs parked, and pending_count() is 2, not 0"),
    "cap_dead_letter_no_wake": ("acquire-woken-at-the-cap", "was still blocked 1.0 s after fail(lease of 'w0') at max_deliveries=1, which dead-letters the sample and drains the closed queue returned"),
    "reclaim_no_wake": ("acquire-woken-by-reclaim", "was still blocked 1.0 s after reclaim_expired() returned"),
    "close_no_wake": ("acquire-woken-by-close", "was still blocked 1.0 s after close() of the empty queue returned"),
    "drain_no_wake": ("acquire-woken-by-drain", "acquire(poll_interval=30.0) was still blocked 1.0 s after the ack that drained the closed queue returned"),
    "dead_letter_drain_no_wake": ("acquire-woken-by-drain", "consumer 1's acquire(poll_interval=30.0) was still blocked 1.0 s after the dead_letter that drained the closed queue returned"),
    "put_wakes_if_empty": ("acquire-each-woken-by-puts", "consumer 2's acquire(poll_interval=30.0) was still blocked 1.0 s after put('w0') then put('w1') returned"),
    "close_wakes_one": ("acquire-all-woken-by-close", "was still blocked 1.0 s after close() of the empty queue returned"),
    "resume_wakes_one": ("put-all-woken-by-resume", "without abort_when was still blocked 1.0 s after put_blocks_until_below('p3', abort_when=lambda: True), the step that resumed"),
    "dead_letter_no_room_wake": ("put-woken-by-dead-letter", "without abort_when was still blocked 1.0 s after dead_letter(lease of 'big', 'kit'), which brought residency to low, returned"),
    "close_wakes_one_producer": ("put-woken-by-close", "was still blocked 1.0 s after close() returned"),
    "backpressure_needs_abort_when": ("put-pauses-and-resumes", "without abort_when returned None after 0.0"),
    "close_ignored_by_producer": ("put-woken-by-close", "without abort_when was still blocked 1.0 s after close() returned"),
    "put_lost_wakeup": ("put-inf-no-lost-wakeup", "put_blocks_until_below('small', poll_interval=math.inf, abort_when=...) was still blocked 1.0 s after ack(lease of 'big') returned: that call landed after the producer's step that paused and before its wait"),
    "callback_under_lock": ("callbacks-outside-locks", "inside on_pause, another thread's pending_count() did not return within 1.0 s: on_pause runs with a queue or store lock held"),
    "callbacks_overlap": ("callbacks-in-order", "on_pause was called while on_resume was still running in another thread (calls then: ['pause', 'resume', 'pause'])"),
    "callback_swallowed": ("callback-errors-propagate", "on_pause raised an exception and the caller of put_blocks_until_below('small', abort_when=lambda: True) got PutAborted"),
    "acquire_timer_restarts": ("acquire-times-out-busy", "s past its poll interval and past the bound of 0.05 s, while, from half its interval on, a ref was put through the other client every 0.025 s and taken back with acquire_nowait() the moment it was pending, until the kit had taken one (1 put), so a put woke it to find nothing (in each of 3 attempts)"),
    "reclaimer_default_interval": ("reclaimer-default-interval", "start_reclaimer() with no interval, on a queue whose visibility timeout is 2.0 s, had not reclaimed the expired lease on 'r0' 0.75 s after start_reclaimer() returned"),
    "parked_bytes_count": ("put-abort-when", "two producers are blocked in put_blocks_until_below (each has consulted abort_when() twice, so each has parked its ref), but parked_bytes is 2, not 36 ('small' 18 + 'other' 18 bytes)"),
    "admission_no_wake": ("acquire-woken-by-admission", "was still blocked 1.0 s after ack(lease of 'big'), after which the blocked producer's next step enqueued 'small', returned"),
    "close_wakes_with_none": ("acquire-woken-by-drain", "consumer 1's acquire(poll_interval=30.0) returned None after"),
    "closed_leaves_parked": ("put-woken-by-close", "the blocked producers raised QueueClosed, but parked_bytes is 36, not 0"),
    "callback_interrupt_sticks": ("callback-interrupted", "on_pause/on_resume were called ['pause'], not ['pause', 'resume']: a callback that raised KeyboardInterrupt"),
    "callbacks_dropped_on_error": ("callbacks-after-an-error", "on_pause/on_resume were called ['pause'], not ['pause', 'resume']: the resume was never reported"),
    # the calls phase
    "json_drops_redelivery": ("json-round-trip", "redelivery_count is 0, not 1"),
    "same_epoch": ("two-queues-one-store", "share the epoch 'queue'"),
    "ack_before_scrub": ("scrub-fails", "outstanding_count() is 0, expected 1"),
    "park_before_abort_when": ("one-step-parks-nothing", "consulted abort_when() the first time, parked_bytes was 18, not 0"),
    "steps_skip_duplicate": ("put-duplicate-while-blocked", "the same ref put meanwhile by a plain put(), returned None once the ack freed room"),
    "counts_unlocked": ("reads-while-busy", "reads of the counts: outstanding_count()"),
    "reclaimer_holds_queue": ("reclaimer-ends", "a queue dropped without close() after start_reclaimer(0.01)"),
    "reclaimer_outlives_drain": ("reclaimer-ends", "close() of a drained queue returned with its reclaimer's thread"),
    "health_fails_open": ("put-health-fails", "returned None although store.health() raised"),
    "dedup_before_scrub": ("scrub-fails-keeps-windows", "put('w0') again (completed by ack just before) after ack(lease of 's0') whose scrub raised"),
    "dead_letter_room_before_scrub": ("scrub-fails-keeps-windows", "dead_letters() and dead_letters_dropped went from ([('w1', 'poison')], 0) to ([], 1)"),
    "deadline_heap_1000": ("deadline-soak", "q.reclaim_expired(): returned"),
    "epoch_empty_accepted": ("lease-epoch-empty", "returned True; docs/API.md says it raises ('foreign')"),
    "lease_ids_from_0": ("lease-ids-from-1", "the first lease of a fresh queue has lease_id 0; docs/API.md: a queue mints lease ids as ints counting up from 1"),
    "lease_id_negative_stale": ("lease-id-below-1", "ack(a copy of the live lease with lease_id=0, which no queue mints) returned False; docs/API.md says it raises ('invalid')"),
    "dead_letters_own_list": ("dead-letters-copied", "a caller appended to and cleared the list dead_letters() returned, and then dead_letters() returned []: it gave out the queue's own list; it must return a copy"),
    "extend_unbounded": ("durations-above-max", "extend(lease, 1e+300) returned True; docs/API.md: every duration is at most threading.TIMEOUT_MAX"),
    "callback_health_at_delivery": ("callback-own-health", "on_pause received (resident_bytes=36, capacity_bytes=None, sample_count=2, high_watermark_hit=False, low_watermark_hit=False) but the step of put_blocks_until_below('p1', abort_when=lambda: True) read (resident_bytes=90,"),
    "deadline_settle_before_count": ("deadline-heap-interleaved", "q.reclaim_expired(): returned 0; the model says 1"),
    "drain_keeps_list": ("dead-letters-drained-copied", "the list drain_dead_letters() returned lists ['d'] after the queue dead-lettered 'd': it is the queue's own list"),
    "drain_torn": ("drain-concurrent", "dead letter(s) never drained"),
    "lease_id_bool": ("lease-id-not-int", "ack(a copy of the live lease with lease_id=True (a bool, == 1), which no queue mints: docs/API.md, a TypeError) returned True"),
    "lease_default_timeout": ("lease-fields", "a lease of a queue made with visibility_timeout=7.3125 carries visibility_timeout Timeout(seconds=30.0)"),
    "reclaimer_interval_zero": ("durations-not-positive", "start_reclaimer(0) returned None"),
    "put_poll_zero": ("durations-not-positive", "put_blocks_until_below(ref, poll_interval=0) returned None"),
    "dead_letter_reason_any": ("dead-letter-reason", "dead_letter(lease, 42) returned True; docs/API.md says it raises ('invalid')"),
    "ref_versions_as_text": ("refs-delivered-intact", "acquire() delivered the ref of 'm0' with target_model_version='7' (str), not 7 (int)"),
    "sample_ids_casefold": ("sample-ids-exact", "put('sample-a') raised DuplicateSample"),
    "dedup_casefold": ("dedup-ids-exact", "put('sample-a') raised ReplayedSample: put('sample-a'): completed within the dedup window, on a queue made with dedup_window=50 after 'Sample-A' completed"),
    "dedup_joined": ("dedup-ids-exact", "put('s') raised ReplayedSample"),
    "dead_letter_late": ("reclaim-scrub-fails", "reclaim_expired() of a lease at max_deliveries=1 never called store.scrub"),
    "acquire_interrupt_loses": ("clock-fails", "acquire() with refs pending, whose clock read raised KeyboardInterrupt: pending_count() + outstanding_count() went from 2 + 0 to 1 + 0"),
    "acquire_clock_loses": ("clock-fails", "after acquire() whose clock raised (the ref stays pending): pending_count() is 0, expected 1"),
    "reclaim_scrub_swallowed": ("reclaim-scrub-fails", "reclaim_expired() that dead-letters 'r0' at max_deliveries=1 returned 1 although the store's scrub raised"),
    "dead_letter_limit_zero_keeps_all": ("dead-letter-limit", "on a queue made with dead_letter_limit=0 (docs/API.md: 0 keeps none), dead_letters() lists ['Z0', 'Z1']"),
    "dead_letter_limit_drops_newest": ("dead-letter-limit", "after 7 dead letters on a queue made with dead_letter_limit=4, dead_letters() lists ['L0', 'L1', 'L2', 'L3']"),
    "dedup_window_capped": ("dedup-window-large", "put('u0000') again, the oldest of 600 ids completed on a queue made with dedup_window=600 returned None; docs/API.md says it raises ('replay')"),
    "dead_letter_reason_trimmed": ("dead-letter-reasons-kept", "dead_letter(lease of 'r1', ' padded\\t '): dead_letters() lists 'r1' with reason 'padded'"),
    "uri_scheme_only": ("foreign-uri-same-scheme", "put(ref of 'mem://conformance-elsewhere') (put of a ref for another store URI"),
    "lease_json_bytes_latin1": ("json-round-trip", "type(lease).from_json(lease.to_json().encode()) (docs/API.md: from_json takes a str or bytes) differs field by field: ref is SampleRef(sample_id='a-Ã©-"),
    "lease_json_no_bytes": ("json-round-trip", "type(lease).from_json(lease.to_json().encode()) raised TypeError"),
    "lease_json_ms_deadline": ("json-round-trip", "differs field by field: deadline is 107.312, not 107.3126234"),
    "dead_letters_cap_100": ("dead-letters-kept", "after 300 dead letters on a queue made with the default dead_letter_limit (docs/API.md: 10,000), dead_letters() lists 100 (200 missing"),
    "put_duplicate_race": ("put-duplicate-concurrent", "4 threads put("),
    "reclaimer_error_lost": ("reclaimer-error-kept", "stop_reclaimer() returned normally after the background reclaimer's reclaim raised"),
    "extend_unlocked": ("extend-while-clock-read", "extend returned True, and reclaim_expired() at the new lease's deadline returned 0, not 1"),
    "reclaim_ms_rounded": ("reclaim-sub-ms", "reclaim_expired() at 130.0001, 0.3 ms before the deadline 130.0004 of the only lease, returned 1"),
    "reclaim_nan_takes_all": ("reclaim-nan-clock", "reclaim_expired() with the clock reading nan returned 1"),
    "pending_capped": ("pending-many", "after 5000 puts (each ref pending): pending_count() is 4096, expected 5000"),
    "reclaim_batch_1000": ("pending-many", "reclaim_expired() with all 5000 leases past their deadline returned 1000"),
    "lease_ids_16bit": ("lease-ids-many", "lease number 65536 of the queue has lease_id 1, after 65535"),
    "with_error_keeps_open": ("with-queue", "after `with queue:` whose block raised, is_closed is False"),
    "reclaimer_error_sticky": ("reclaimer-error-kept", "stop_reclaimer() of the new reclaimer, which met no error (the old error was raised once) raised RuntimeError"),
    "epoch_from_id": ("two-queues-one-store", "queues made one after another, each dropped before the next, have"),
    "seconds_overflow": ("durations-above-max", "extend(lease, 10**400) raised OverflowError"),
    "reclaimer_start_race": ("reclaimers-started-at-once", "4 threads called start_reclaimer(60.0) at once on a queue with no reclaimer (round "),
    "abort_raise_stays_parked": ("put-duplicate-while-blocked", "raised DuplicateSample, parked_bytes is 18, not 0"),
    "acquire_poll_rounded_up": ("acquire-poll-inf", "acquire() on an empty open queue returned None after 1."),
    "dedup_forever": ("dedup-window-large", "after 600 newer ids completed (it left the dedup window) raised ReplayedSample"),
    "dedup_short": ("scrub-fails-keeps-windows", "the failed ack committed nothing, so the window still holds 'w0' returned None"),
    "reclaim_early": ("reclaim-sub-ms", "0.3 ms before the deadline 130.0004 of the only lease, returned 1"),
    "stale_ack": ("lease-ids-many", "ack of the first lease on 'w' (lease_id 1), stale 65599 leases ago, did not return False"),
    "reclaimer_idle": ("reclaimer-error-kept", "had not tried to scrub its sample within 5.0 s"),
    "reclaimer_unstoppable": ("reclaimer-error-kept", "stop_reclaimer() returned normally after the background reclaimer's reclaim raised"),
    "dead_letter_reason_surrogate": ("dead-letter-reason", "docs/API.md: a reason holding a lone surrogate has no UTF-8 form and is a ValueError"),
    "close_raises_reclaimer_error": ("reclaimer-error-kept", "close() of the drained queue whose reclaimer an error stopped (docs/API.md: close() never raises that error) raised RuntimeError"),
    "with_starts_reclaimer": ("with-queue", "start_reclaimer() inside the with block (docs/API.md: `with queue:` starts nothing on entry) raised RuntimeError"),
    "with_closes_store": ("with-queue", "store.put('b') raised StoreClosed"),
    "inf_by_identity": ("acquire-poll-inf", "acquire(poll_interval=float('inf')) with 'b' pending raised ValueError"),
    "acquire_default_poll_1s": ("acquire-poll-inf", "acquire() on an empty open queue returned None after 1."),
    "dead_letter_mutable": ("dead-letters-copied", "a caller set the reason of the dead letter dead_letters() returned (MutableDeadLetter)"),
    "close_stops_reclaimer": ("reclaimer-error-kept", "close() of the drained queue whose reclaimer an error stopped (docs/API.md: close() never raises that error) raised RuntimeError"),
    "orphan_limit": ("orphans-collected", "store.scrub of the orphan 'o3' (the 4th collected, 18 bytes) returned True, but health() went from 360 bytes in 11 samples to 360 in 11"),
}

# Mutants whose rejection repeats what another mutant's shows (the same check of the
# same phase rejects both): conformance/test_mutants.py certifies them with their phase
# alone only under the slow mark, and the one named here in the default run.
REPEATS = {
    "acquire_polls_100ms": "acquire_polls_60ms",  # blocking: acquire-woken-by-fail
    "fail_no_wake": "acquire_polls_60ms",  # blocking: acquire-woken-by-fail
    "acquire_polls_200ms": "put_no_wake",  # blocking: acquire-woken-by-put
    "dead_letter_drain_no_wake": "drain_no_wake",  # blocking: acquire-woken-by-drain
    "pause_every_step": "resume_wakes_one",  # blocking: put-all-woken-by-resume
    "close_wakes_one_producer": "close_ignored_by_producer",  # blocking: put-woken-by-close
    "pending_lifo": "fail_to_head",  # calls: deadline-soak
    "reclaim_strict": "fail_to_head",  # calls: deadline-soak
    "ring_wrap": "fail_to_head",  # calls: deadline-soak
    "extend_from_deadline": "fail_to_head",  # calls: deadline-soak
    "deadline_heap_1000": "fail_to_head",  # calls: deadline-soak
    "lease_recycled": "lease_ids_from_0",  # calls: lease-ids-from-1
    "reclaim_batch_1000": "pending_capped",  # calls: pending-many
    "redis_loss_undetected": "redis_unfenced_after_restart",  # faults: restart-lossy
    "duplicate_put": "put_duplicate_race",  # calls: put-duplicate-concurrent (before the threads phase's histories)
    "health_torn": "reclaim_snapshot",  # threads: a history that is not linearizable
    "pause_flag_race": "no_band",  # threads: a history that is not linearizable
    "early_terminal_none": "extend_stale",  # walks: a divergence from the model
    "dead_letters_sorted": "dead_letters_cap_100",  # calls: dead-letters-kept (before the walks diverge on dead letters)
    "put_poll_zero": "reclaimer_interval_zero",  # calls: durations-not-positive
    "lease_json_ms_deadline": "lease_json_no_bytes",  # calls: json-round-trip
    "lease_json_bytes_latin1": "lease_json_no_bytes",  # calls: json-round-trip
}

# Mutants that a later phase catches too, though an earlier one stops a whole run first
# (a stronger check came later in the kit's life), where no other mutant shows that the
# later phase, or its check, can fail: the phase, and for the blocking phase the check and
# a part of what it says.  conformance/test_mutants.py certifies each with that phase
# alone (the lockstep phase's only mutant is reclaim_early).
ALSO_CAUGHT = {
    "close_stops_reclaimer": ("blocking", "reclaimer-after-close", "after close() of a queue with a lease outstanding, the reclaimer started before it had not reclaimed that lease"),
    "acquire_poll_rounded_up": ("blocking", "acquire-times-out", 'acquire(poll_interval=0.2) returned None 1.0'),
    "reclaim_early": ("lockstep", None, None),
    "reclaimer_idle": ("blocking", "reclaimer-reclaims", "start_reclaimer(0.01) with the clock past the only lease's deadline reclaimed nothing within 50 of its intervals (0.5 s;"),
    "reclaimer_unstoppable": ("blocking", "reclaimer-stops", 'after stop_reclaimer() returned, the next expired lease was reclaimed within 10 reclaimer intervals (0.1 s;'),
}
