"""The executable reference model of the refqueue protocol.

Pure functions over immutable state (``refqueue.model.actions``), the named
safety properties (``refqueue.model.invariants``), the closed world of one
producer and a few consumers (``refqueue.model.world``) and its exhaustive
explorer (``refqueue.model.explorer``, which walks the world's nodes as ints
over the tables of ``refqueue.model.tables``).  It shares no code with the
production queue it judges and imports neither torch nor threading.
"""

from refqueue.model.actions import (
    Health,
    Outcome,
    Rejection,
    TryPutResult,
    ack,
    acquire,
    allowed_acquires,
    close,
    dead_letter,
    expired,
    extend,
    fail,
    find,
    get,
    health,
    is_drained,
    is_live,
    lease_deadline,
    lease_state,
    outstanding_count,
    pending_count,
    put,
    put_retry,
    rec_of,
    reclaim_expired,
    recover,
    release,
    restart_lossy,
    scrub,
    scrub_intent,
    store_put,
    tick,
    try_put,
)
from refqueue.model.invariants import STATE_INVARIANTS, TRANSITION_INVARIANTS, violated
from refqueue.model.state import (
    ACKED,
    DEAD,
    DROPPED,
    LEASED,
    LOST,
    MAX_DELIVERIES_REASON,
    PENDING,
    STORED,
    Config,
    ModelLease,
    Rec,
    State,
    initial_state,
    lease_epoch,
    make_config,
)

__all__ = [
    "ACKED", "DEAD", "DROPPED", "LEASED", "LOST", "PENDING", "STORED", "MAX_DELIVERIES_REASON",
    "Config", "ModelLease", "Rec", "State", "initial_state", "lease_epoch", "make_config",
    "Health", "Outcome", "Rejection", "TryPutResult",
    "store_put", "put", "try_put", "acquire", "get", "release", "ack", "fail",
    "dead_letter", "extend", "reclaim_expired", "close", "tick", "scrub",
    "put_retry", "scrub_intent", "restart_lossy", "recover", "lease_state",
    "allowed_acquires", "expired", "find", "health", "is_drained", "is_live",
    "lease_deadline", "outstanding_count", "pending_count", "rec_of",
    "STATE_INVARIANTS", "TRANSITION_INVARIANTS", "violated",
]
