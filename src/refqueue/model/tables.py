"""The closed world's nodes as ints, and the moves of their parts as tables.

``explore`` and ``build_graph`` walk the world breadth-first over millions of
transitions; hashing and comparing ``Node`` tuples (a state, a tuple of
``Consumer`` tuples of leases, the producers) cost more than the moves.  So a
node is one int, its *key*: each consumer's holding is a field of
``FIELD_BITS`` bits (consumer ``c`` at bit ``FIELD_BITS * c``) giving its index
in a table of the distinct ``Consumer`` values; above them sits the index of
the node's *core*, the distinct (model state, producers, productions started).

A node's moves are its core's moves (``world._core_moves``: the producers' and
the environment's, the consumers unchanged) and each consumer's
(``world.consumer_moves``, which read the model's state and that consumer
only): ``Tables`` computes each once, interned, and a move changes one or two
fields of the key, so a child's key is the parent's plus a difference.  Both
functions are looked up in ``refqueue.model.world`` when the tables are made,
so a patched one (a spec mutant) is what is walked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from refqueue.model import world as W
from refqueue.model.state import State
from refqueue.model.world import Consumer, Memo, Node, World

__all__ = ["FIELD_BITS", "FIELD", "Tables"]

FIELD_BITS = 32
FIELD = (1 << FIELD_BITS) - 1

Producers = tuple[tuple[str | None, ...], int]  # (producers, productions started)


class Tables:
    """The interned parts of ``world``'s nodes and the moves of each.

    ``states``, ``parts`` (producers, produced), ``cores`` ((state index, part
    index)) and ``mes`` (``Consumer`` values) grow as the walk meets new ones;
    ``on_state(s)`` and ``on_core(g)`` are told of each new state and core.
    ``shift[c]`` is consumer ``c``'s field; ``top`` where the core index
    starts; ``low`` masks the consumers' fields.
    """

    def __init__(
        self,
        world: World,
        on_state: Callable[[int], None] | None = None,
        on_core: Callable[[int], None] | None = None,
    ) -> None:
        self.world = world
        self.nc = world.consumers
        self.shift = [FIELD_BITS * c for c in range(self.nc)]
        self.top = FIELD_BITS * self.nc
        self.low = (1 << self.top) - 1
        self.states: list[State] = []
        self.state_ix: dict[State, int] = {}
        self.parts: list[Producers] = []
        self.part_ix: dict[Producers, int] = {}
        self.cores: list[tuple[int, int]] = []
        self.core_ix: dict[tuple[int, int], int] = {}
        self.mes: list[Consumer] = []
        self.me_ix: dict[Consumer, int] = {}
        self._crowds: dict[int, tuple[Consumer, ...]] = {}
        self._by_state: dict[tuple[int, int], list[tuple]] = {}
        self._memo = Memo()  # what several holdings share (an acquire, what a lease can do)
        self._on_state = on_state
        self._on_core = on_core
        self._core_moves = W._core_moves
        self._consumer_moves = W.consumer_moves

    # -- interning ----------------------------------------------------------------

    def state_index(self, state: State) -> int:
        i = self.state_ix.get(state)
        if i is None:
            i = self.state_ix[state] = len(self.states)
            self.states.append(state)
            if self._on_state is not None:
                self._on_state(i)
        return i

    def core_index(self, s: int, producers: tuple[str | None, ...], produced: int) -> int:
        pk = (producers, produced)
        q = self.part_ix.get(pk)
        if q is None:
            q = self.part_ix[pk] = len(self.parts)
            self.parts.append(pk)
        return self.core_at(s, q)

    def core_at(self, s: int, q: int) -> int:
        """The core of state ``s`` and producers part ``q``."""
        g = self.core_ix.get((s, q))
        if g is None:
            g = self.core_ix[(s, q)] = len(self.cores)
            self.cores.append((s, q))
            if self._on_core is not None:
                self._on_core(g)
        return g

    def me_index(self, me: Consumer) -> int:
        m = self.me_ix.get(me)
        if m is None:
            m = self.me_ix[me] = len(self.mes)
            self.mes.append(me)
        return m

    def key_of(self, node: Node) -> int:
        key = self.core_index(self.state_index(node.state), node.producers, node.produced) << self.top
        for c, me in enumerate(node.consumers):
            key |= self.me_index(me) << self.shift[c]
        return key

    # -- reading a key --------------------------------------------------------------

    def crowd(self, bits: int) -> tuple[Consumer, ...]:
        """The consumers of a key's consumer fields (``key & low``)."""
        got = self._crowds.get(bits)
        if got is None:
            mes = self.mes
            got = self._crowds[bits] = tuple(mes[(bits >> sh) & FIELD] for sh in self.shift)
        return got

    def node_of(self, key: int) -> Node:
        s, q = self.cores[key >> self.top]
        producers, produced = self.parts[q]
        return _node((self.states[s], self.crowd(key & self.low), producers, produced))

    def alone(self, key: int, c: int) -> Node:
        """The node of ``key`` holding consumer ``c`` only (a property judged per consumer)."""
        s, q = self.cores[key >> self.top]
        producers, produced = self.parts[q]
        return _node((self.states[s], (self.mes[(key >> self.shift[c]) & FIELD],), producers, produced))

    # -- moves ------------------------------------------------------------------------

    def core_moves(self, g: int) -> list[tuple[str, object, int, object, int]]:
        """Core ``g``'s moves: (action, arg, state' index, value, core' index)."""
        s, q = self.cores[g]
        producers, produced = self.parts[q]
        out = []
        for action, arg, new_state, value, new_producers, new_produced in self._core_moves(
            self.world, self.states[s], producers, produced
        ):
            ns = self.state_index(new_state)
            out.append((action, arg, ns, value, self.core_index(ns, new_producers, new_produced)))
        return out

    def consumer_moves(self, s: int, m: int) -> list[tuple[str, int | None, int, int, object]]:
        """Consumer value ``m``'s moves from state ``s``, computed once per pair:
        (action, the extend's seconds or None, the consumer's index difference,
        state' index, value).  A move leaves the producers alone."""
        moves = self._by_state.get((s, m))
        if moves is None:
            moves = self._by_state[(s, m)] = [
                (action, seconds, self.me_index(new_me) - m, self.state_index(new_state), value)
                for action, seconds, new_me, new_state, value in self._consumer_moves(
                    self.world, self.states[s], self.mes[m], self._memo
                )
            ]
        return moves


# A Node without the Python-level __new__ frame (as the world builds them).
_node = functools.partial(tuple.__new__, Node)
