"""A consumer shaped the way the seed's loader documentation describes it.

Written here from that documentation, not from the seed's code: an iterator
that pulls one ``SampleRef`` lease at a time from a queue, materializes its
tensors through the store, hands the trainer a fresh batch with the EAGLE-3
field names, and acks the *previous* lease (and releases its store handle)
on the next pull.  It stops the way the seed's consumer loop does: ``acquire``
returned None and ``is_closed`` is true.  It uses nothing but the public
queue and store API the seed documents (``acquire(poll_interval=)``,
``ack``, ``fail``, ``is_closed``; ``get``, ``release``), and ignores every
return value the seed's API does not have.

The compatibility suite runs it, unchanged, over refqueue's
``SampleRefQueue`` and ``LocalFeatureStore``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class SeedShapedBatch:
    """The four EAGLE-3 features the seed's batch carries."""

    aux_hidden_states: Any
    input_ids: Any
    attention_mask: Any
    loss_mask: Any


class SeedShapedLoader:
    def __init__(self, queue: Any, store: Any, algorithm: Any = None, acquire_poll_interval: float = 0.05) -> None:
        self.queue = queue
        self.store = store
        self.algorithm = algorithm
        self.acquire_poll_interval = acquire_poll_interval
        self._held: tuple[Any, Any] | None = None  # (lease, handle) of the batch the trainer holds

    def __iter__(self) -> SeedShapedLoader:
        return self

    def __next__(self) -> SeedShapedBatch:
        self._let_go_of_previous()
        while True:
            lease = self.queue.acquire(poll_interval=self.acquire_poll_interval)
            if lease is None:
                if self.queue.is_closed:
                    raise StopIteration
                continue  # a transient empty poll
            ref = lease.ref
            if self.algorithm is not None and ref.algorithm != self.algorithm:
                self.queue.fail(lease)
                raise ValueError(f"ref {ref.sample_id!r} is for {ref.algorithm}, not {self.algorithm}")
            tensors, handle = self.store.get(ref)
            self._held = (lease, handle)
            return SeedShapedBatch(
                aux_hidden_states=tensors["aux_hidden_states"],
                input_ids=tensors["input_ids"],
                attention_mask=tensors["attention_mask"],
                loss_mask=tensors["loss_mask"],
            )

    def close(self) -> None:
        self._let_go_of_previous()

    def _let_go_of_previous(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            lease, handle = held
            self.queue.ack(lease)
            self.store.release(handle)
