"""AdminApis: the admin requests tools and client test suites make topics with (CreateTopics) and
read their settings with (DescribeConfigs, for topics and brokers: every value read-only, as
nothing here alters them).

A topic is created by the controller's one topic-creation path (``Controller.create_topic``, which
``--topic`` and auto-creation use too): the broker checks what only it can (the replication factor
and configs against this cluster's), then asks the controller for each topic and answers once
every topic has its answer, or with REQUEST_TIMED_OUT after the request's ``timeout_ms``. Every topic here is replicated on every broker and
``min.insync.replicas`` is the cluster's, so a request for another replication factor or another
``min.insync.replicas`` is refused naming the cluster's value, as is any other topic config.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from ..controller import CONTROLLER_ID
from ..protocol import ApiKey as InternalApiKey, CreateTopicsRequest as InternalCreateTopics, Errors
from ..replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

Respond = Callable[[Any], None]
DEFAULT = -1  # CreateTopics' "the broker's default" for partitions and replication factor
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4                     # DescribeConfigs' resource types
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5                # its config sources
BOOLEAN, STRING, INT = 1, 2, 3                             # its config types (v3+)


class AdminApis:
    """The admin part of Kafka's KafkaApis / ControllerApis for one broker."""

    def __init__(self, replica_manager: ReplicaManager, num_partitions: int, auto_create_topics: bool,
                 topic_id: Callable[[str], Any]) -> None:
        self.rm = replica_manager
        self.num_partitions = num_partitions
        self.topic_id = topic_id
        c = replica_manager.config
        # Kafka's names of what this cluster is configured with: (value, source, type)
        self.topic_configs = {
            "min.insync.replicas": (str(c.min_insync_replicas), STATIC_BROKER_CONFIG, INT),
            "unclean.leader.election.enable": (str(c.unclean_leader_election_enable).lower(), STATIC_BROKER_CONFIG,
                                               BOOLEAN),
            "cleanup.policy": ("delete", DEFAULT_CONFIG, STRING),
        }
        self.broker_configs = {
            **self.topic_configs,
            "num.partitions": (str(num_partitions), STATIC_BROKER_CONFIG, INT),
            "default.replication.factor": (str(c.replicas), STATIC_BROKER_CONFIG, INT),
            "auto.create.topics.enable": (str(auto_create_topics).lower(), STATIC_BROKER_CONFIG, BOOLEAN),
        }

    def handle_create_topics(self, req: CreateTopicsRequest, version: int, respond: Respond) -> Any:
        """Each topic checked here, then created (or, ``validate_only``, checked) by the controller."""
        results: dict[str, tuple[int, str | None, int]] = {}
        names = [t.name for t in req.topics]
        asked: list[tuple[str, int]] = []
        for t in req.topics:
            if names.count(t.name) > 1:  # Kafka: every copy of a name given twice is refused
                results[t.name] = (Errors.INVALID_REQUEST, "the topic is named more than once in the request", -1)
                continue
            partitions = self.num_partitions if t.num_partitions == DEFAULT else t.num_partitions
            refusal = self._refusal(t)
            if refusal is not None:
                results[t.name] = (*refusal, partitions)
            else:
                asked.append((t.name, partitions))

        def response() -> CreateTopicsResponse:
            replicas = self.rm.config.replicas
            Result = CreateTopicsResponse.CreatableTopicResult
            return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=[Result(
                name=name, topic_id=self.topic_id(name), error_code=error, error_message=message,
                topic_config_error_code=Errors.NONE, num_partitions=n if error == Errors.NONE else -1,
                replication_factor=replicas if error == Errors.NONE else -1, configs=None)
                for name, (error, message, n) in results.items()])

        if not asked:
            return response()

        correlations: list[int] = []

        def answered(name: str, partitions: int, resp: Any) -> None:
            if name in results:  # timed out before
                return
            error = Errors(resp.error)
            results[name] = (error, None if error == Errors.NONE else error.name, partitions)
            if error == Errors.NONE and not req.validate_only:
                log.info("broker %d: created topic %s (%d partitions) for a client's CreateTopics",
                         self.rm.broker_id, name, partitions)
            if len(results) == len(req.topics):
                timer.cancel()
                respond(response())

        def expire() -> None:
            """The request's timeout_ms passed without the controller's answer: REQUEST_TIMED_OUT, as Kafka."""
            for c in correlations:
                self.rm.endpoint.forget(c)
            for name, partitions in asked:
                results.setdefault(name, (Errors.REQUEST_TIMED_OUT, "the controller did not answer in time", -1))
            respond(response())

        # librdkafka sends its operation_timeout, 0 unless set: then the broker's request.timeout.ms
        timer = self.rm.scheduler.schedule(req.timeout_ms if req.timeout_ms > 0 else self.rm.config.request_timeout_ms,
                                           expire)
        for name, partitions in asked:
            correlations.append(self.rm.endpoint.send_request(
                CONTROLLER_ID, InternalApiKey.CREATE_TOPICS, 1,
                InternalCreateTopics(name, partitions, bool(req.validate_only)),
                lambda resp, name=name, partitions=partitions: answered(name, partitions, resp)))
        return None

    def _refusal(self, t: CreateTopicsRequest.CreatableTopic) -> tuple[int, str] | None:
        """What this cluster cannot make of the topic ``t``, as (error, message), or None."""
        replicas, min_isr = self.rm.config.replicas, self.rm.config.min_insync_replicas
        if t.assignments:
            return Errors.INVALID_REQUEST, "replica assignments are not supported: every broker holds every topic"
        if t.num_partitions != DEFAULT and t.num_partitions < 1:
            return Errors.INVALID_PARTITIONS, f"partitions must be at least 1, got {t.num_partitions}"
        if t.replication_factor not in (DEFAULT, replicas):
            return (Errors.INVALID_REPLICATION_FACTOR,
                    f"every topic here is replicated on all {replicas} brokers, got {t.replication_factor}")
        for c in t.configs:
            if c.name != "min.insync.replicas":
                return Errors.INVALID_CONFIG, f"{c.name} is not configurable here"
            if c.value != str(min_isr):
                return (Errors.INVALID_CONFIG,
                        f"min.insync.replicas is the cluster's ({min_isr}, serve --min-insync-replicas), got {c.value}")
        return None

    def handle_describe_configs(self, req: DescribeConfigsRequest, version: int, respond: Respond) -> Any:
        """A topic's or this broker's configs (those named, or all), each read-only."""
        Result = DescribeConfigsResponse.DescribeConfigsResult
        Config = Result.DescribeConfigsResourceResult
        results = []
        for r in req.resources:
            error, message, configs = self._configs(r.resource_type, r.resource_name)
            wanted = configs if r.configuration_keys is None else {
                k: configs[k] for k in r.configuration_keys if k in configs}
            results.append(Result(
                error_code=error, error_message=message, resource_type=r.resource_type,
                resource_name=r.resource_name, configs=[Config(
                    name=name, value=value, read_only=True, config_source=source, is_default=source == DEFAULT_CONFIG,
                    is_sensitive=False, synonyms=[], config_type=kind, documentation=None)
                    for name, (value, source, kind) in sorted(wanted.items())]))
        return DescribeConfigsResponse(version=version, throttle_time_ms=0, results=results)

    def _configs(self, resource_type: int, name: str) -> tuple[int, str | None, dict]:
        if resource_type == TOPIC_RESOURCE:
            if not any(t == name for t, _ in self.rm.names):
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name}", {}
            return Errors.NONE, None, self.topic_configs
        if resource_type == BROKER_RESOURCE:
            if name not in ("", str(self.rm.broker_id)):
                return Errors.INVALID_REQUEST, f"this is broker {self.rm.broker_id}: ask broker {name} for its configs", {}
            return Errors.NONE, None, self.broker_configs
        return Errors.INVALID_REQUEST, f"only topic and broker configs are described here, not type {resource_type}", {}
