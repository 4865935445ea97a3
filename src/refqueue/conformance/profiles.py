"""How much a certification runs: the ``ci`` and ``deep`` profiles."""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["PROFILES", "Profile"]


@dataclass(frozen=True)
class Profile:
    """How much a certification runs.

    ``hypothesis_profile`` is the Hypothesis settings profile the lockstep
    run starts from (``ci`` is Hypothesis's own, ``deep`` the kit's).
    """

    name: str
    examples: int  # Hypothesis examples of the lockstep machine
    steps_per_example: int  # at most this many rules per example
    walks: int  # random walks on the world graph
    walk_length: int  # transitions after the walk's start node
    hypothesis_profile: str
    histories: int = 20  # multi-threaded histories recorded and checked
    history_ops: int = 400  # calls per history (all threads together)
    history_threads: int = 4  # threads per history (one controller, the rest workers)
    history_steps: int = 200_000  # the checker's budget of model steps per history
    producer_bound: float = 1.0  # seconds a blocked producer may wait once consumers drained what they can
    producer_samples: int = 6  # samples each producer of the producers phase's stress check puts
    wake_bound: float = 0.05  # seconds from a waking call's return to the woken call's return (blocking phase)
    wake_trials: int = 6  # trials of each blocking check that measures a wakeup at random offsets (timing model)
    shrink_seconds: float = 30.0  # time a failing threaded history may be shrunk for (0: not shrunk)
    shrink_reruns: int = 3  # recordings of a shrunk candidate before it counts as passing (threads vary)
    process_histories: int = 5  # multi-process histories of the faults phase (the same in the short pass)

    def short(self) -> Profile:
        """The profile of ``--fail-fast``'s short pass: a few walks (two per
        world), a few lockstep examples, two histories, two samples per
        producer, each blocking check once; bounds and shrinking as the profile's."""
        return replace(
            self, walks=min(self.walks, 8), examples=min(self.examples, 20),
            histories=min(self.histories, 2), history_ops=min(self.history_ops, 200),
            producer_samples=min(self.producer_samples, 2), wake_trials=1,
        )  # fmt: skip


PROFILES: dict[str, Profile] = {
    "ci": Profile("ci", examples=1000, steps_per_example=50, walks=2000, walk_length=40, hypothesis_profile="ci"),
    "deep": Profile(
        "deep", examples=2000, steps_per_example=200, walks=20000, walk_length=60, hypothesis_profile="deep",
        histories=200, history_ops=1000, history_steps=1_000_000, producer_samples=20, wake_trials=20,
        process_histories=20,
    ),
}
