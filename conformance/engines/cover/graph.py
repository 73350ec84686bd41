"""The model's state graph at a scope, every edge kept: the explorer's states and transitions
(``isrcheck.model.explorer.successors``, states identified by ``state_key``), which ``cover``
runs on the implementation.

A node is a distinct state key, with the first state found for it (breadth first) as its
representative; an edge is one transition of ``successors``: one step, or a whole fetch round
with the explorer's ``fetch_rounds``. Per node the graph also keeps its parent in the
breadth-first tree, so a shortest path from the initial state to any node is at hand.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass

from isrcheck.model import ModelConfig, Scope, Step, initial_state
from isrcheck.model.explorer import state_key, successors
from isrcheck.model.losses import last_replica_standing


@dataclass
class StateGraph:
    config: ModelConfig
    scope: Scope
    states: list  # node -> its representative State
    keys: dict  # state key -> node
    out: list[list[int]]  # node -> its edges, in the explorer's order
    edge_steps: list[tuple[Step, ...]]  # edge -> its steps
    edge_target: array  # edge -> target node
    parent_edge: array  # node -> the edge of the breadth-first tree that reached it (-1: root)
    seconds: float

    @property
    def edges(self) -> int:
        return len(self.edge_steps)

    def node_of(self, state) -> int | None:
        return self.keys.get(state_key(self.scope, state))

    def path_to(self, node: int) -> list[int]:
        """The edges of a shortest path from the initial state to ``node``."""
        path = []
        while node:
            e = self.parent_edge[node]
            path.append(e)
            node = self.edge_source[e]
        return path[::-1]

    def __post_init__(self) -> None:
        self.edge_source = array("l", [0]) * len(self.edge_steps)
        for n, edges in enumerate(self.out):
            for e in edges:
                self.edge_source[e] = n


def build_graph(config: ModelConfig, scope: Scope, max_states: int | None = None) -> StateGraph:
    """Every state of ``scope`` reachable from the initial state and every transition between
    them (also those back to a known state), breadth first. Raises ValueError past ``max_states``."""
    start = time.perf_counter()
    init = initial_state(config)
    keys = {state_key(scope, init): 0}
    states = [init]
    out: list[list[int]] = []
    edge_steps: list[tuple[Step, ...]] = []
    edge_target = array("l")
    parent_edge = array("l", [-1])
    step_ids: dict[tuple, tuple] = {}  # one tuple object per distinct transition: shared, not copied
    n = 0
    while n < len(states):
        mine = []
        for steps, t, _inside in successors(config, scope, states[n]):
            if scope.exclude_known_losses and last_replica_standing(t):
                continue
            key = state_key(scope, t)
            target = keys.get(key)
            if target is None:
                target = keys[key] = len(states)
                states.append(t)
                parent_edge.append(len(edge_steps))
                if max_states is not None and len(states) > max_states:
                    raise ValueError(f"the scope has more than {max_states:,} states")
            mine.append(len(edge_steps))
            edge_steps.append(step_ids.setdefault(steps, steps))
            edge_target.append(target)
        out.append(mine)
        n += 1
    return StateGraph(
        config, scope, states, keys, out, edge_steps, edge_target, parent_edge, time.perf_counter() - start
    )
