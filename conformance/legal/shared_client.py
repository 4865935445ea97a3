"""Legal: the in-process queue with ``open_client``: another client is a thin
forwarder to the same queue object (one process holds the queue; its
clients share it).  The clock a client is opened with is not read: the queue
has one clock, the factory's.  The kit drives two clients of each queue
(docs/CERTIFYING.md, several clients); this certifies that machinery at the
in-process queue's speed."""

from typing import Any

from refqueue.conformance.backends import inprocess


class Client:
    """Another client of ``queue``: every attribute is the queue's."""

    def __init__(self, queue: Any) -> None:
        object.__setattr__(self, "_queue", queue)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a client of the queue sets nothing on it (tried {name!r})")

    def __enter__(self) -> "Client":
        self._queue.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._queue.__exit__(*exc)

    def __repr__(self) -> str:
        return f"Client({self._queue!r})"


def make(store: Any, clock: Any, **config: Any) -> Any:
    return inprocess(store, clock, **config)


def open_client(queue: Any, store: Any, clock: Any) -> Client:
    return Client(queue)


make.open_client = open_client  # type: ignore[attr-defined]
make.capabilities = inprocess.capabilities  # type: ignore[attr-defined]
