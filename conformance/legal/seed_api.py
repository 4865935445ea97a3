"""Legal: the seed's API only.  No ``extend``, ``dead_letter``, ``acquire_nowait``
or lease JSON; no ``max_deliveries``/``dedup_window`` keywords; and
``put_blocks_until_below(ref, poll_interval=)`` without ``abort_when``.  The
capabilities say so, and the kit certifies it on the smaller world."""

from typing import Any

from conformance.mutants._base import BaseQueue
from refqueue.conformance import Capabilities

_HIDDEN = frozenset({"extend", "dead_letter", "acquire_nowait", "dead_letters", "drain_dead_letters"})


class SeedApiQueue:
    """The seed's calls of a ``BaseQueue``, and nothing else of its extensions."""

    def __init__(self, store: Any, clock: Any, **config: Any) -> None:
        for key in ("max_deliveries", "dedup_window"):
            if key in config:
                raise TypeError(f"SeedApiQueue() got an unexpected keyword argument {key!r}")
        self._q = BaseQueue(store, clock, **config)

    def put_blocks_until_below(self, ref: Any, poll_interval: float = 0.05) -> None:
        self._q.put_blocks_until_below(ref, poll_interval=poll_interval)

    # `with queue:` (dunders are looked up on the type, so __getattr__ cannot forward them)
    def __enter__(self) -> "SeedApiQueue":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._q.__exit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        if name in _HIDDEN:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self._q, name)


def make(store: Any, clock: Any, **config: Any) -> SeedApiQueue:
    return SeedApiQueue(store, clock, **config)


make.capabilities = Capabilities(
    extend=False,
    dead_letter=False,
    max_deliveries=False,
    dedup_window=False,
    acquire_nowait=False,
    abort_when=False,
    lease_json=False,
)
