"""The wire view of a model state: message fields an older protocol version does not carry.

Fetch v0 (before KIP-320) has no lastFetchedEpoch; OffsetsForLeaderEpoch v0 (KIP-101) answers an
end offset only. The implementation cannot show what its wire does not carry, so the runner
compares the model's state in this view (identity under kip-320).
"""

from __future__ import annotations

from isrcheck.impl.replication.protocol import VARIANTS
from isrcheck.model import State

FETCH_WITH_EPOCHS = 3  # the implementation's Fetch v3 (Kafka's v9+, KIP-320) carries lastFetchedEpoch


def wire_view(state: State, protocol: str) -> State:
    """``state`` with the message fields the protocol's wire versions do not carry blanked out,
    as the implementation's variant says which versions it speaks."""
    variant = VARIANTS[protocol]
    if variant.fetch_version >= FETCH_WITH_EPOCHS:
        return state
    requests = state.fetch_requests
    if any(m.last_fetched_epoch != -1 for q in requests for m in q):  # Fetch v0: no lastFetchedEpoch
        requests = tuple(tuple(m._replace(last_fetched_epoch=-1) for m in q) for q in requests)
    responses = state.fetch_responses
    if variant.offsets_for_leader_epoch_version == 0 and any(m.kind == "epoch_end" for q in responses for m in q):
        # OffsetsForLeaderEpoch v0 answers an end offset only
        responses = tuple(tuple(m._replace(epoch=-1) if m.kind == "epoch_end" else m for m in q) for q in responses)
    if requests is state.fetch_requests and responses is state.fetch_responses:
        return state
    return state._replace(fetch_requests=requests, fetch_responses=responses)
