"""CreateTopics, DeleteTopics and DescribeConfigs: what tools, admin clients and client test suites
make and inspect topics with.

A broker forwards CreateTopics and DeleteTopics to the controller, one request per topic, as KRaft
brokers forward them: a topic is created by the controller's one path, the one ``--topic`` and
auto-creation take, with every partition on every broker (the replication factor is the broker
count, or -1 for it) and ``min.insync.replicas`` the one topic config (any other is INVALID_CONFIG:
isrcheck would not honour it); a manual replica assignment is INVALID_REPLICA_ASSIGNMENT. The answer
waits for the controller's; a topic it did not answer for within the request's ``timeout_ms`` is
REQUEST_TIMED_OUT, as in Kafka. DescribeConfigs answers for a topic (its own ``min.insync.replicas``
or the cluster's, and the other settings its partitions run with) and for this broker (the settings
``isrcheck serve`` started it with); every config is read-only (no AlterConfigs here).

A topic id (Metadata v10+, CreateTopics v7, DeleteTopics v6) is made from the name and the id of the
topic's first partition, which the controller never hands out twice: a topic deleted and created
again has a new id, as in Kafka, so clients forget what they knew of the old one.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

from ..controller import CONTROLLER_ID
from ..protocol import ApiKey, Errors
from ..protocol import CreateTopicsRequest as CreateTopic
from ..protocol import DeleteTopicsRequest as DeleteTopic
from .registry import serves
from .settings import KafkaSettings

if TYPE_CHECKING:
    from ..replication.replica_manager import ReplicaManager

ZERO_UUID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: no topic id
TOPIC, BROKER = 2, 4  # ConfigResource.Type
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5  # DescribeConfigsResponse's ConfigSource
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7  # its ConfigType
MIN_INSYNC_REPLICAS = "min.insync.replicas"
NEVER = "-1"  # Kafka's "no limit" for retention and the like


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: int
    type: int


def topic_id(name: str, first_partition: int) -> uuid.UUID:
    """The id of topic ``name`` whose first partition has id ``first_partition`` (see the module docstring)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"isrcheck-topic:{name}:{first_partition}")


def _bool(value: bool) -> str:
    return "true" if value else "false"


class AdminApis:
    """The admin requests of one broker's KafkaApis (``registry``)."""

    def __init__(self, broker_id: int, replica_manager: "ReplicaManager", settings: "KafkaSettings") -> None:
        self.broker_id, self.rm, self.settings = broker_id, replica_manager, settings

    # -- the controller ---------------------------------------------------------------------------
    def _ask_controller(
        self, api_key: int, version: int, request: Any, timeout_ms: int, answer: Callable[[Any], None]
    ) -> None:
        """One request to the controller; ``answer`` gets its response once, or None if it was lost
        or did not come within ``timeout_ms`` (the cluster's request.timeout.ms if not positive)."""
        endpoint, done = self.rm.endpoint, []

        def once(response: Any) -> None:
            if not done:
                done.append(True)
                timer.cancel()
                answer(response)

        def expire() -> None:
            endpoint.forget(correlation_id)
            once(None)

        timer = self.rm.scheduler.schedule(timeout_ms if timeout_ms > 0 else self.rm.config.request_timeout_ms, expire)
        correlation_id = endpoint.next_correlation_id()
        endpoint.send_request(CONTROLLER_ID, api_key, version, request, once, correlation_id)

    @staticmethod
    def _gather(names: list, respond: Callable[[Any], None], response: Callable[[dict], Any]):
        """(done, finish): ``done(name, result)`` records one topic's result; once every name has one,
        ``response(results)`` goes to ``respond``, or is what ``finish()`` returns to the handler if
        every result came before it (else None: answered later), as a produce waits for its acks."""
        results: dict = {}
        waiting = []

        def done(name, result) -> None:
            results[name] = result
            if len(results) == len(names) and waiting:
                respond(response(results))

        def finish():
            if len(results) == len(names):
                return response(results)
            waiting.append(True)
            return None

        return done, finish

    # -- CreateTopics -----------------------------------------------------------------------------
    @serves(19, CreateTopicsRequest, CreateTopicsResponse, (2, 7))
    def handle_create_topics(self, req: CreateTopicsRequest, version: int, respond) -> Any:
        """Each topic checked here (its configs, its assignment) and then by the controller, which
        creates it unless ``validate_only``."""
        first_of: dict[str, Any] = {}
        for t in req.topics:
            first_of.setdefault(t.name, t)
        names = list(first_of)
        validate_only = bool(req.validate_only)  # v1+: every version served has it

        def response(results: dict) -> CreateTopicsResponse:
            Result = CreateTopicsResponse.CreatableTopicResult
            topics = []
            for name in names:
                error, message, partitions, min_isr, first = results[name]
                ok = error == Errors.NONE
                topics.append(
                    Result(
                        name=name,
                        topic_id=topic_id(name, first) if first >= 0 else ZERO_UUID,
                        error_code=error,
                        error_message=message or None,
                        topic_config_error_code=Errors.NONE,
                        num_partitions=partitions if ok else -1,
                        replication_factor=self.rm.config.replicas if ok else -1,
                        configs=[
                            Result.CreatableTopicConfigs(
                                name=c.name, value=c.value, read_only=True, config_source=c.source, is_sensitive=False
                            )
                            for c in self.topic_configs(min_isr)
                        ]
                        if ok
                        else None,
                    )
                )
            return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=topics)

        done, finish = self._gather(names, respond, response)
        for name, t in first_of.items():
            if sum(other.name == name for other in req.topics) > 1:
                done(name, (Errors.INVALID_REQUEST, "Duplicate topic name in the request.", -1, -1, -1))
                continue
            partitions = t.num_partitions if t.num_partitions != -1 else self.settings.num_partitions
            error, message, min_isr = self._check_request(t)
            if error != Errors.NONE:
                done(name, (error, message, -1, -1, -1))
                continue

            def answered(resp, name=name, partitions=partitions, min_isr=min_isr) -> None:
                if resp is None:
                    done(name, (Errors.REQUEST_TIMED_OUT, "The controller did not answer in time.", -1, -1, -1))
                else:
                    done(name, (resp.error, resp.message, partitions, min_isr, resp.partition_id))

            self._ask_controller(
                ApiKey.CREATE_TOPICS,
                1,
                CreateTopic(name, partitions, t.replication_factor, min_isr, validate_only),
                req.timeout_ms,
                answered,
            )
        return finish()

    @staticmethod
    def _check_request(t) -> tuple[int, str, int]:
        """(error, message, min.insync.replicas or -1) of one CreatableTopic's assignment and configs."""
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                return (
                    Errors.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments "
                    "were set. Both cannot be used at the same time.",
                    -1,
                )
            return (
                Errors.INVALID_REPLICA_ASSIGNMENT,
                "isrcheck assigns the replicas itself (every partition on "
                "every broker): give a partition count, no assignment.",
                -1,
            )
        min_isr = -1
        for c in t.configs or ():
            if c.name != MIN_INSYNC_REPLICAS:
                return (
                    Errors.INVALID_CONFIG,
                    f"isrcheck does not support the topic config {c.name}: "
                    f"{MIN_INSYNC_REPLICAS} is the one a topic may set.",
                    -1,
                )
            if c.value is None:
                continue
            try:
                min_isr = int(c.value)
            except ValueError:
                return (
                    Errors.INVALID_CONFIG,
                    f"Invalid value {c.value} for configuration {MIN_INSYNC_REPLICAS}: Not a number of type INT",
                    -1,
                )
            if min_isr < 1:
                return (
                    Errors.INVALID_CONFIG,
                    f"Invalid value {c.value} for configuration {MIN_INSYNC_REPLICAS}: Value must be at least 1",
                    -1,
                )
        return Errors.NONE, "", min_isr

    # -- DeleteTopics -----------------------------------------------------------------------------
    @serves(20, DeleteTopicsRequest, DeleteTopicsResponse, (1, 6))
    def handle_delete_topics(self, req: DeleteTopicsRequest, version: int, respond) -> Any:
        """Each topic, named or (v6) given by its id, deleted by the controller."""
        wanted = [(t.name, t.topic_id) for t in req.topics] if version >= 6 else [(n, None) for n in req.topic_names]
        keys = list(dict.fromkeys(wanted))

        def response(results: dict) -> DeleteTopicsResponse:
            Result = DeleteTopicsResponse.DeletableTopicResult
            return DeleteTopicsResponse(
                version=version,
                throttle_time_ms=0,
                responses=[
                    Result(name=name, topic_id=given or ZERO_UUID, error_code=error, error_message=message)
                    for (_, given), (name, error, message) in ((k, results[k]) for k in keys)
                ],
            )

        done, finish = self._gather(keys, respond, response)
        for key in keys:
            name, given = key
            if wanted.count(key) > 1:
                done(key, (name, Errors.INVALID_REQUEST, "Duplicate topic in the request."))
                continue
            if name is None:
                name = self._name_of(given)
                if name is None:
                    done(key, (None, Errors.UNKNOWN_TOPIC_ID, None))
                    continue

            def answered(resp, key=key, name=name) -> None:
                error = Errors.REQUEST_TIMED_OUT if resp is None else resp.error
                done(key, (name, error, None))

            self._ask_controller(ApiKey.DELETE_TOPICS, 0, DeleteTopic(name), req.timeout_ms, answered)
        return finish()

    def topic_id_of(self, name: str) -> uuid.UUID:
        """The id of topic ``name`` as this broker knows it (ZERO_UUID: not at all)."""
        first = self.rm.names.get((name, 0))
        return ZERO_UUID if first is None else topic_id(name, first)

    def _name_of(self, given: uuid.UUID) -> str | None:
        return next((name for name, index in self.rm.names if index == 0 and self.topic_id_of(name) == given), None)

    # -- DescribeConfigs --------------------------------------------------------------------------
    @serves(32, DescribeConfigsRequest, DescribeConfigsResponse, (1, 4))
    def handle_describe_configs(self, req: DescribeConfigsRequest, version: int, respond) -> Any:
        Result = DescribeConfigsResponse.DescribeConfigsResult
        Entry = Result.DescribeConfigsResourceResult
        results = []
        for r in req.resources:
            error, message, entries = self._configs(r.resource_type, r.resource_name)
            if r.configuration_keys is not None:
                entries = [e for e in entries if e.name in r.configuration_keys]
            results.append(
                Result(
                    error_code=error,
                    error_message=message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    configs=[
                        Entry(
                            name=e.name,
                            value=e.value,
                            read_only=True,
                            config_source=e.source,
                            is_default=e.source == DEFAULT_CONFIG,
                            is_sensitive=False,
                            synonyms=[],
                            config_type=e.type,
                            documentation=None,
                        )
                        for e in entries
                    ],
                )
            )
        return DescribeConfigsResponse(version=version, throttle_time_ms=0, results=results)

    def _configs(self, resource_type: int, name: str) -> tuple[int, str | None, list[ConfigEntry]]:
        if resource_type == TOPIC:
            first = self.rm.names.get((name, 0))
            if first is None:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.", []
            return Errors.NONE, None, self.topic_configs(self.rm.topic_min_insync_replicas.get(name, -1))
        if resource_type == BROKER:
            if name not in ("", str(self.broker_id)):
                return (
                    Errors.INVALID_REQUEST,
                    f"Unexpected broker id, expected {self.broker_id} or empty string, but received {name}",
                    [],
                )
            return Errors.NONE, None, self.broker_configs()
        return Errors.INVALID_REQUEST, f"isrcheck has no configs of resource type {resource_type}", []

    def topic_configs(self, min_insync_replicas: int = -1) -> list[ConfigEntry]:
        """A topic's configs: its own ``min.insync.replicas`` (-1: the cluster's) and the cluster's settings."""
        c = self.rm.config
        own = min_insync_replicas > 0
        return [
            ConfigEntry(
                MIN_INSYNC_REPLICAS,
                str(min_insync_replicas if own else c.min_insync_replicas),
                TOPIC_CONFIG if own else STATIC_BROKER_CONFIG,
                INT,
            ),
            ConfigEntry(
                "unclean.leader.election.enable", _bool(c.unclean_leader_election_enable), STATIC_BROKER_CONFIG, BOOLEAN
            ),
            ConfigEntry(
                "flush.messages",
                str(c.flush_messages) if c.flush_messages else str(2**63 - 1),
                STATIC_BROKER_CONFIG if c.flush_messages else DEFAULT_CONFIG,
                LONG,
            ),
            ConfigEntry("cleanup.policy", "delete", DEFAULT_CONFIG, LIST),
            ConfigEntry("retention.ms", NEVER, STATIC_BROKER_CONFIG, LONG),
            ConfigEntry("retention.bytes", NEVER, DEFAULT_CONFIG, LONG),
        ]

    def broker_configs(self) -> list[ConfigEntry]:
        """The settings this broker runs with, by their Kafka names."""
        c, s = self.rm.config, self.settings
        ints = {
            "broker.id": self.broker_id,
            "num.partitions": s.num_partitions,
            "default.replication.factor": c.replicas,
            "min.insync.replicas": c.min_insync_replicas,
            "replica.lag.time.max.ms": c.replica_lag_time_max_ms,
            "replica.fetch.wait.max.ms": c.replica_fetch_wait_max_ms,
            "replica.fetch.backoff.ms": c.replica_fetch_backoff_ms,
            "broker.session.timeout.ms": c.broker_session_timeout_ms,
            "broker.heartbeat.interval.ms": c.broker_heartbeat_interval_ms,
            "replica.high.watermark.checkpoint.interval.ms": c.replica_high_watermark_checkpoint_interval_ms,
        }
        return [ConfigEntry(name, str(value), STATIC_BROKER_CONFIG, INT) for name, value in ints.items()] + [
            ConfigEntry("auto.create.topics.enable", _bool(s.auto_create_topics), STATIC_BROKER_CONFIG, BOOLEAN),
            ConfigEntry(
                "unclean.leader.election.enable", _bool(c.unclean_leader_election_enable), STATIC_BROKER_CONFIG, BOOLEAN
            ),
            ConfigEntry(
                "log.flush.interval.messages",
                str(c.flush_messages or 2**63 - 1),
                STATIC_BROKER_CONFIG if c.flush_messages else DEFAULT_CONFIG,
                LONG,
            ),
            ConfigEntry("log.retention.ms", NEVER, STATIC_BROKER_CONFIG, LONG),
        ]


__all__ = ["AdminApis", "ConfigEntry", "ZERO_UUID", "topic_id"]
