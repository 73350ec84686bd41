"""Consumer groups and transactions, which isrcheck's brokers do not serve, refused so that a client
fails at once and says why, and nothing else is disturbed.

A consumer that subscribes, or is assigned a partition without an offset (its group's committed
offset: OffsetFetch), or commits, needs a group coordinator; COORDINATOR_NOT_AVAILABLE would be
retried by clients forever. So FindCoordinator names the broker asked as the group's coordinator,
and its group requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetFetch, OffsetCommit) are
answered GROUP_AUTHORIZATION_FAILED, which Kafka's clients report to the application at once
(kafka-python raises it from ``poll``, librdkafka's consumer delivers it as an error). A consumer
assigned partitions with explicit offsets never sends one (librdkafka's, which must name a group,
looks the coordinator up and is told of no error). A transactional producer's FindCoordinator (and
InitProducerId with a transactional id) is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which
both clients take as fatal. The broker logs one WARNING line per group or transactional id naming
the feature and what to use instead.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from ..protocol import Errors
from .registry import serves

log = logging.getLogger(__name__)

GROUP, TRANSACTION, SHARE_GROUP = 0, 1, 2  # FindCoordinator's key types (KIP-98, KIP-932)
MAX_WARNED = 10_000  # keys whose refusal was logged: a bound, should a client invent keys without end


class Unsupported(NamedTuple):
    error: int
    feature: str
    instead: str


FEATURES = {
    GROUP: Unsupported(
        Errors.GROUP_AUTHORIZATION_FAILED,
        "consumer groups",
        "assign partitions with an explicit offset (docs/kafka.md)",
    ),
    TRANSACTION: Unsupported(
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "transactions",
        "use an idempotent producer without a transactional id",
    ),
    SHARE_GROUP: Unsupported(
        Errors.GROUP_AUTHORIZATION_FAILED, "share groups", "assign partitions with an explicit offset (docs/kafka.md)"
    ),
}


class CoordinatorApis:
    """FindCoordinator and the group coordinator's requests of one broker (``registry``)."""

    def __init__(self, broker_id: int, listener: tuple[str, int]) -> None:
        self.broker_id, self.listener = broker_id, listener
        self.warned: set[tuple[int, str]] = set()

    def refuse(self, key_type: int, key: str, request: Any) -> tuple[int, str]:
        """(error, message) for ``key`` (a group id or transactional id) of ``key_type``, with the
        warning line the first time it is asked for."""
        what = FEATURES.get(key_type, FEATURES[GROUP])
        if (key_type, key) not in self.warned and len(self.warned) < MAX_WARNED:
            self.warned.add((key_type, key))
            client = request.header.client_id if request.header is not None else None
            name = "transactional id" if key_type == TRANSACTION else "group"
            log.warning(
                "%s are not supported: %s of client %r for %s %r answered %s; instead, %s",
                what.feature,
                type(request).__name__,
                client,
                name,
                key,
                Errors(what.error).name,
                what.instead,
            )
        return what.error, f"{what.feature} are not supported by isrcheck; instead, {what.instead}"

    # -- FindCoordinator --------------------------------------------------------------------------
    @serves(10, FindCoordinatorRequest, FindCoordinatorResponse, (0, 4))
    def handle_find_coordinator(self, req: FindCoordinatorRequest, version: int, respond) -> Any:
        """A group's coordinator is this broker (its requests are refused there); a transactional
        id (or a share group) is refused here."""
        key_type = req.key_type if version >= 1 else GROUP
        host, port = self.listener

        def answer(key: str) -> tuple[int, str | None, int, str, int]:
            if key_type == GROUP:
                return Errors.NONE, None, self.broker_id, host, port
            error, message = self.refuse(key_type, key, req)
            return error, message, -1, "", -1

        if version < 4:
            error, message, node, host, port = answer(req.key)
            return FindCoordinatorResponse(
                version=version,
                throttle_time_ms=0,
                error_code=error,
                error_message=message,
                node_id=node,
                host=host,
                port=port,
            )
        coordinators = []
        for key in req.coordinator_keys:
            error, message, node, host, port = answer(key)
            coordinators.append(
                FindCoordinatorResponse.Coordinator(
                    key=key, node_id=node, host=host, port=port, error_code=error, error_message=message
                )
            )
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=coordinators)

    # -- the group coordinator's requests ---------------------------------------------------------
    def _group(self, group_id: str, request: Any) -> int:
        return self.refuse(GROUP, group_id, request)[0]

    # JoinGroup v9 would make kafka-python infer a newer broker
    @serves(11, JoinGroupRequest, JoinGroupResponse, (0, 8))
    def handle_join_group(self, req: JoinGroupRequest, version: int, respond) -> Any:
        return JoinGroupResponse(
            version=version,
            throttle_time_ms=0,
            error_code=self._group(req.group_id, req),
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if version >= 7 else "",
            leader="",
            skip_assignment=False,
            member_id=req.member_id,
            members=[],
        )

    @serves(14, SyncGroupRequest, SyncGroupResponse, (0, 5))
    def handle_sync_group(self, req: SyncGroupRequest, version: int, respond) -> Any:
        return SyncGroupResponse(
            version=version,
            throttle_time_ms=0,
            error_code=self._group(req.group_id, req),
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )

    @serves(12, HeartbeatRequest, HeartbeatResponse, (0, 4))
    def handle_heartbeat(self, req: HeartbeatRequest, version: int, respond) -> Any:
        return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=self._group(req.group_id, req))

    @serves(13, LeaveGroupRequest, LeaveGroupResponse, (0, 5))
    def handle_leave_group(self, req: LeaveGroupRequest, version: int, respond) -> Any:
        return LeaveGroupResponse(
            version=version, throttle_time_ms=0, error_code=self._group(req.group_id, req), members=[]
        )

    # OffsetCommit v10 and OffsetFetch v8+ name topics by id or many groups
    @serves(8, OffsetCommitRequest, OffsetCommitResponse, (2, 9))
    def handle_offset_commit(self, req: OffsetCommitRequest, version: int, respond) -> Any:
        """Every partition refused (OffsetCommit has no error but the partitions')."""
        error = self._group(req.group_id, req)
        Topic = OffsetCommitResponse.OffsetCommitResponseTopic
        return OffsetCommitResponse(
            version=version,
            throttle_time_ms=0,
            topics=[
                Topic(
                    name=t.name,
                    partitions=[
                        Topic.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ],
        )

    @serves(9, OffsetFetchRequest, OffsetFetchResponse, (1, 7))
    def handle_offset_fetch(self, req: OffsetFetchRequest, version: int, respond) -> Any:
        """The group's error (v2+) and each partition asked for refused with no committed offset,
        as Kafka's ``OffsetFetchRequest.getErrorResponse``."""
        error = self._group(req.group_id, req)
        Topic = OffsetFetchResponse.OffsetFetchResponseTopic
        return OffsetFetchResponse(
            version=version,
            throttle_time_ms=0,
            error_code=error,
            topics=[
                Topic(
                    name=t.name,
                    partitions=[
                        Topic.OffsetFetchResponsePartition(
                            partition_index=i,
                            committed_offset=-1,
                            committed_leader_epoch=-1,
                            metadata=None,
                            error_code=error,
                        )
                        for i in t.partition_indexes
                    ],
                )
                for t in req.topics or ()
            ],
        )


__all__ = ["FEATURES", "GROUP", "SHARE_GROUP", "TRANSACTION", "CoordinatorApis", "Unsupported"]
