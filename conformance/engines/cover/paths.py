"""A path cover of the state graph: schedules from the initial state that together take every
edge, and try every step the model refuses at every node they reach.

Depth first with restarts: a schedule starts with a shortest path (the breadth-first tree) to
the first node, in breadth-first order, that still has an edge to take, then takes untaken edges
as long as the node it stands on has one (or one step ahead does), up to ``max_steps`` steps. The
first time any schedule reaches a node, it tries there every step of the alphabet the model
refuses (``isrcheck.conformance.generators.refusals``); refused steps change nothing, so they are tried
back to back before the schedule goes on.

Each schedule is planned on the model's concrete states: an edge's steps were enumerated in its
source node's representative state, and a state of the same key reached otherwise may differ in
what the key leaves out (LeaderAndIsr requests the broker will ignore, at other FIFO positions; a
HW checkpoint once no crash is left, which ``checkpoint_hw`` reads). An edge whose steps are
refused there, or that lands elsewhere, is deferred: after the depth-first schedules, each
deferred edge gets a schedule of its own along the breadth-first tree, which reproduces its
source's representative state exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.conformance.engines.cover.graph import StateGraph
from isrcheck.conformance.generators.refusals import refused_steps
from isrcheck.model import Step, StepRefused, apply, enabled
from isrcheck.model.explorer import state_key

MAX_STEPS = 300  # planned steps of one schedule (refused steps tried come on top)


@dataclass(frozen=True)
class CoverSchedule:
    """Steps as ids into the plan's vocabulary; after ``edge_ends[i]`` steps the schedule has
    taken the i-th edge it covers first; after ``refusal_points[j]`` steps it stands on a node
    reached for the first time, where it tries every refused step."""

    steps: tuple[int, ...]
    edge_ends: tuple[int, ...]
    refusal_points: tuple[int, ...]
    refusals: int  # refused steps planned at those points (the executor enumerates them itself)
    prefix: int  # steps of the shortest path replayed before its first new edge


@dataclass
class CoverPlan:
    vocabulary: list[Step]
    schedules: list[CoverSchedule]
    edges: int  # edges of the graph
    edges_planned: int  # edges the schedules take on their target
    nodes_reached: int
    refusals: int  # (node, refused step) pairs the schedules try
    steps: int  # planned steps, refused ones left out

    @property
    def prefix_steps(self) -> int:
        """Planned steps that replay a path to where a schedule's new edges begin."""
        return sum(s.prefix for s in self.schedules)

    def to_json(self) -> dict:
        return {
            "schedules": len(self.schedules),
            "steps": self.steps,
            "prefix_steps": self.prefix_steps,
            "edges": self.edges,
            "edges_planned": self.edges_planned,
            "nodes_reached": self.nodes_reached,
            "refusals": self.refusals,
        }


def plan_cover(graph: StateGraph, max_steps: int = MAX_STEPS) -> CoverPlan:
    cfg, scope = graph.config, graph.scope
    out, target = graph.out, graph.edge_target
    n_nodes = len(graph.states)
    next_edge = [0] * n_nodes
    reached = bytearray(n_nodes)
    vocabulary: list[Step] = []
    ids: dict[Step, int] = {}
    schedules: list[CoverSchedule] = []
    totals = {"edges": 0, "refusals": 0, "steps": 0}
    first = 0
    deferred: list[int] = []
    while True:
        while first < n_nodes and next_edge[first] == len(out[first]):
            first += 1
        if first == n_nodes and not deferred:
            break
        alone = None
        if first == n_nodes:
            alone = deferred.pop(0)
        state, node = graph.states[0], 0
        steps: list[int] = []
        ends: list[int] = []
        points: list[int] = []
        refusals = 0

        def arrive(n: int, s) -> None:
            nonlocal refusals
            if not reached[n]:
                reached[n] = 1
                points.append(len(steps))
                refusals += len(refused_steps(cfg, s, enabled(cfg, s), scope.disk_faults))

        def take(e: int, new: bool):
            """(state, node) after edge ``e``; None if it does not go from here to its target."""
            s, mark = state, len(steps)
            try:
                for st in graph.edge_steps[e]:
                    s, _ = apply(cfg, s, st)
                    sid = ids.get(st)
                    if sid is None:
                        sid = ids[st] = len(vocabulary)
                        vocabulary.append(st)
                    steps.append(sid)
            except StepRefused:
                s = None
            landed = None if s is None else graph.keys.get(state_key(scope, s))
            if landed != target[e]:
                del steps[mark:]
                return None
            if new:
                ends.append(len(steps))
            return s, landed

        arrive(0, state)
        src = first if alone is None else graph.edge_source[alone]
        for e in graph.path_to(src):
            state, node = take(e, False)  # the tree's path reproduces the representatives
            arrive(node, state)
        prefix = len(steps)
        if alone is not None:
            state, node = take(alone, True)
            arrive(node, state)
            node = None  # one deferred edge per schedule
        while node is not None and len(steps) < max_steps:
            mine = out[node]
            if next_edge[node] < len(mine):
                e = mine[next_edge[node]]
                next_edge[node] += 1
                taken = take(e, True)
                if taken is None:
                    deferred.append(e)
                    continue
            else:  # one step ahead to a node with an edge still to take, if there is one
                taken = None
                for e in mine:
                    if next_edge[target[e]] < len(out[target[e]]):
                        taken = take(e, False)
                        if taken is not None:
                            break
                if taken is None:
                    break
            state, node = taken
            arrive(node, state)
        schedules.append(CoverSchedule(tuple(steps), tuple(ends), tuple(points), refusals, prefix))
        totals["edges"] += len(ends)
        totals["refusals"] += refusals
        totals["steps"] += len(steps)
    return CoverPlan(
        vocabulary, schedules, graph.edges, totals["edges"], sum(reached), totals["refusals"], totals["steps"]
    )
