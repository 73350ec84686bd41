"""ProducerIdManager: producer ids for InitProducerId, from blocks the controller hands out."""
from __future__ import annotations

from typing import Callable

from ..controller import CONTROLLER_ID
from ..network import NodeEndpoint
from ..protocol import AllocateProducerIdsRequest, AllocateProducerIdsResponse, ApiKey, Errors

# called with (error, producer id)
Callback = Callable[[int, int], None]


class ProducerIdManager:
    """Ids from the current block; when it runs out, one AllocateProducerIds for the next, the
    InitProducerIds that came meanwhile waiting for it (RPCProducerIdManager)."""

    def __init__(self, broker_id: int, endpoint: NodeEndpoint, broker_epoch: Callable[[], int]) -> None:
        self.broker_id, self.endpoint, self.broker_epoch = broker_id, endpoint, broker_epoch
        self.next_id, self.end = 0, 0
        self.waiting: list[Callback] = []

    def generate(self, callback: Callback) -> None:
        if self.next_id < self.end:
            self.next_id += 1
            callback(Errors.NONE, self.next_id - 1)
            return
        self.waiting.append(callback)
        if len(self.waiting) == 1:
            self.endpoint.send_request(CONTROLLER_ID, ApiKey.ALLOCATE_PRODUCER_IDS, 0,
                                       AllocateProducerIdsRequest(self.broker_id, self.broker_epoch()),
                                       self._on_block)

    def _on_block(self, resp: AllocateProducerIdsResponse | None) -> None:
        waiting, self.waiting = self.waiting, []
        if resp is None or resp.error != Errors.NONE:
            for callback in waiting:  # the client retries InitProducerId
                callback(Errors.COORDINATOR_NOT_AVAILABLE, -1)
            return
        self.next_id, self.end = resp.producer_id_start, resp.producer_id_start + resp.producer_id_len
        for callback in waiting:
            self.generate(callback)
