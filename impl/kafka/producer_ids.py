"""ProducerIdManager: producer ids for InitProducerId, from blocks the controller hands out."""

from __future__ import annotations

from typing import Callable

from ..controller import CONTROLLER_ID
from ..network import NodeEndpoint
from ..protocol import AllocateProducerIdsRequest, AllocateProducerIdsResponse, ApiKey, Errors


class ProducerIdManager:
    """Ids from the current block, as Kafka's ``RPCProducerIdManager.generateProducerId``
    (org.apache.kafka.coordinator.transaction): an InitProducerId that finds no id at hand is
    answered COORDINATOR_LOAD_IN_PROGRESS at once, which clients retry, while one
    AllocateProducerIds asks the controller for the next block; the next block is asked for ahead,
    once 90% of the current one is handed out (``PID_PREFETCH_THRESHOLD``)."""

    PREFETCH_THRESHOLD = 0.9

    def __init__(self, broker_id: int, endpoint: NodeEndpoint, broker_epoch: Callable[[], int]) -> None:
        self.broker_id, self.endpoint, self.broker_epoch = broker_id, endpoint, broker_epoch
        self.start, self.next_id, self.end = 0, 0, 0
        self.next_block: tuple[int, int] | None = None  # (first id, end) the controller handed out
        self.in_flight = False

    def generate(self) -> tuple[int, int]:
        """(error, producer id): an id and NONE, or COORDINATOR_LOAD_IN_PROGRESS and -1."""
        if self.next_id >= self.end and self.next_block is not None:
            (self.start, self.end), self.next_block = self.next_block, None
            self.next_id = self.start
        if self.next_id < self.end:
            producer_id, self.next_id = self.next_id, self.next_id + 1
            if producer_id == self.start + int((self.end - self.start) * self.PREFETCH_THRESHOLD):
                self._request_block()
            return Errors.NONE, producer_id
        self._request_block()
        # Kafka: COORDINATOR_LOAD_IN_PROGRESS rather than a timeout, which older clients take as fatal
        return Errors.COORDINATOR_LOAD_IN_PROGRESS, -1

    def _request_block(self) -> None:
        if self.next_block is None and not self.in_flight:
            self.in_flight = True
            self.endpoint.send_request(
                CONTROLLER_ID,
                ApiKey.ALLOCATE_PRODUCER_IDS,
                0,
                AllocateProducerIdsRequest(self.broker_id, self.broker_epoch()),
                self._on_block,
            )

    def _on_block(self, resp: AllocateProducerIdsResponse | None) -> None:
        self.in_flight = False
        if resp is None or resp.error != Errors.NONE:
            return  # the next InitProducerId asks again
        self.next_block = (resp.producer_id_start, resp.producer_id_start + resp.producer_id_len)
