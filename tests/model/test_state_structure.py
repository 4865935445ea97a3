"""The model's State keeps its sequences in chunks shared between states
(``refqueue.model.state.CHUNK``); whatever the layout, a state must read,
compare and hash exactly as the plain tuples it stands for, and an update
must leave the state it was made from as it was.

A walk of 6,000 updates over about 3,000 ids (about a hundred chunks) checks
every read against plain lists kept beside it, and a state built at once from
those lists against the one the updates made.
"""

from __future__ import annotations

import random

from refqueue.model import state as S


def _rec(n: int) -> S.Rec:
    return S.Rec(S.PENDING, 1, n % 3, n % 2, None, True, n)


def _agrees(s: S.State, ids: list, recs: list, pending: list, rng: random.Random) -> None:
    assert s.ids == tuple(ids) and s.recs == tuple(recs) and s.pending == tuple(pending)
    for i in rng.sample(range(len(ids)), min(50, len(ids))):
        assert S.rec_at(s, i) is recs[i] and S.id_at(s, i) == ids[i] and S.index_of(s, ids[i]) == i
    assert S.index_of(s, "never-seen") == -1
    if pending:
        assert S.pending_head(s) == pending[0]
    plain = S.State(s.now, s.closed, s.paused, tuple(pending), tuple(ids), tuple(recs), s.resident_bytes,
                    s.resident_count, s.dead, s.completed)
    assert plain == s and s == plain and hash(plain) == hash(s)


def test_updates_across_groups_read_as_the_plain_tuples_and_leave_older_states_alone():
    rng = random.Random(19)
    s = S.initial_state(0.0)
    ids: list[str] = []
    recs: list[S.Rec] = []
    pending: list[str] = []
    kept = None
    for step in range(6000):
        roll = rng.random()
        if roll < 0.5 or not ids:
            sid = f"s{len(ids)}"
            rec = _rec(len(ids))
            s = S.with_id_appended(s, sid, rec)
            ids.append(sid)
            recs.append(rec)
        elif roll < 0.8:
            i = rng.randrange(len(ids))
            rec = _rec(step)
            s = S.with_rec_queued(s, i, rec) if rng.random() < 0.5 else S.with_rec(s, i, rec)
            if s.pending != tuple(pending):  # with_rec_queued appended ids[i] to pending
                pending.append(ids[i])
            recs[i] = rec
        elif pending:
            i = S.index_of(s, pending[0])
            rec = _rec(-step)
            s = S.with_rec_popped(s, i, rec)
            recs[i] = rec
            pending.pop(0)
        if step == 2500:
            kept = (s, tuple(ids), tuple(recs), tuple(pending))
        if step % 500 == 499:
            _agrees(s, ids, recs, pending, rng)
    assert len(ids) > 2 * 1024
    old, old_ids, old_recs, old_pending = kept
    _agrees(old, list(old_ids), list(old_recs), list(old_pending), rng)


def test_a_state_built_from_many_ids_at_once_reads_them_back():
    ids = tuple(f"x{i}" for i in range(2100))
    recs = tuple(_rec(i) for i in range(2100))
    s = S.State(0.0, False, False, ids[:1500], ids, recs, 0, 0, (), ())
    assert s.ids == ids and s.recs == recs and s.pending == ids[:1500]
    assert [S.index_of(s, x) for x in ("x0", "x1023", "x1024", "x2099")] == [0, 1023, 1024, 2099]
    assert S.rec_at(s, 2048) is recs[2048]
    t = S.with_rec(s, 1030, _rec(-1))
    assert t.recs[1030] == _rec(-1) and s.recs[1030] == _rec(1030) and t.recs[:1030] == recs[:1030]
    u = S.with_id_appended(s, "y", _rec(5))
    assert u.ids == ids + ("y",) and S.index_of(u, "y") == 2100 and s.ids == ids
