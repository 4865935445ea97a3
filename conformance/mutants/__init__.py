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
"""

from pathlib import Path

MUTANTS = tuple(sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("_")))

# The first phase of a whole ci certification (seed 0) that rejects each mutant.
CAUGHT_BY = {
    'ack_before_scrub': 'calls',
    'ack_keeps_data': 'calls',
    'acquire_poll_rounded_up': 'blocking',
    'acquire_polls_100ms': 'blocking',
    'acquire_polls_200ms': 'blocking',
    'acquire_polls_60ms': 'blocking',
    'acquire_race': 'producers',
    'acquire_timer_restarts': 'blocking',
    'backpressure_needs_abort_when': 'blocking',
    'callback_health_at_delivery': 'calls',
    'callback_swallowed': 'blocking',
    'callback_under_lock': 'blocking',
    'callbacks_dropped_on_error': 'blocking',
    'callbacks_overlap': 'blocking',
    'close_drops_pending': 'calls',
    'close_ignored_by_producer': 'blocking',
    'close_no_wake': 'blocking',
    'close_wakes_one': 'blocking',
    'close_wakes_one_producer': 'blocking',
    'copy_not_acking': 'calls',
    'dead_letter_drain_no_wake': 'blocking',
    'dead_letter_late': 'walks',
    'dead_letter_no_room_wake': 'blocking',
    'dead_letter_reason_any': 'calls',
    'dead_letters_cap_100': 'calls',
    'dead_letters_own_list': 'calls',
    'dead_letters_sorted': 'walks',
    'deadline_heap_1000': 'calls',
    'deadline_settle_before_count': 'calls',
    'dedup_forever': 'walks',
    'dedup_short': 'walks',
    'drain_keeps_list': 'calls',
    'drain_no_wake': 'blocking',
    'drain_torn': 'calls',
    'duplicate_put': 'threads',
    'early_terminal_none': 'walks',
    'epoch_empty_accepted': 'calls',
    'extend_from_deadline': 'calls',
    'extend_stale': 'walks',
    'extend_unbounded': 'calls',
    'fail_no_wake': 'blocking',
    'fail_to_head': 'calls',
    'fail_uncounted': 'calls',
    'foreign_accepted': 'calls',
    'health_torn': 'threads',
    'json_drops_redelivery': 'calls',
    'lease_default_timeout': 'calls',
    'lease_id_bool': 'calls',
    'lease_id_negative_stale': 'calls',
    'lease_ids_from_0': 'calls',
    'lease_json_ms_deadline': 'calls',
    'lease_json_no_bytes': 'calls',
    'lease_recycled': 'calls',
    'no_band': 'threads',
    'old_backpressure': 'calls',
    'orphan_limit': 'calls',
    'parked_bytes_count': 'blocking',
    'pause_every_step': 'blocking',
    'pause_flag_race': 'threads',
    'pending_lifo': 'calls',
    'put_duplicate_race': 'calls',
    'put_lost_wakeup': 'blocking',
    'put_no_wake': 'blocking',
    'put_poll_zero': 'calls',
    'put_wakes_if_empty': 'blocking',
    'reclaim_by_id': 'walks',
    'reclaim_early': 'lockstep',
    'reclaim_no_wake': 'blocking',
    'reclaim_snapshot': 'threads',
    'reclaim_strict': 'calls',
    'reclaimer_default_interval': 'blocking',
    'reclaimer_idle': 'blocking',
    'reclaimer_interval_zero': 'calls',
    'reclaimer_missing': 'calls',
    'reclaimer_unstoppable': 'blocking',
    'redis_client_clock': 'calls',
    'redis_close_per_client': 'faults',
    'redis_dedup_per_client': 'calls',
    'redis_lease_ids_per_client': 'calls',
    'redis_loss_undetected': 'faults',
    'redis_no_intent': 'faults',
    'redis_reclaimer_dies': 'faults',
    'redis_unfenced_ack': 'calls',
    'redis_unfenced_after_restart': 'faults',
    'release_scrubs': 'walks',
    'resume_wakes_one': 'blocking',
    'ring_wrap': 'calls',
    'same_epoch': 'calls',
    'stale_ack': 'walks',
    'uri_scheme_only': 'calls',
}
