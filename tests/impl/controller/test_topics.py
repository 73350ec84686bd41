"""Many topics and partitions (the cluster ``isrcheck serve`` runs): every partition replicated by
the same controller, ReplicaManager, Partition and ReplicaFetcher code, independently, in the
deterministic simulation's auto mode."""

import random

from isrcheck.impl.controller import Controller, FileMetadataStore
from isrcheck.impl.controller.controller import PRODUCER_ID_BLOCK_SIZE
from isrcheck.impl.kafka.producer_ids import ProducerIdManager
from isrcheck.impl.network import NodeEndpoint
from isrcheck.impl.protocol import ApiKey, Errors, ProduceRequest, WireRecord
from isrcheck.impl.replication import Broker, ClusterConfig
from isrcheck.impl.sim.clock import SimClock
from isrcheck.impl.sim.network import NetworkFaults, SimNetwork
from isrcheck.impl.storage import SimulatedFileSystem

# the real-time shape of serve's timings (a lag time well above the fetch wait), in simulated ms
CONFIG = ClusterConfig(
    replicas=3,
    min_insync_replicas=2,
    replica_lag_time_max_ms=200,
    replica_fetch_wait_max_ms=20,
    broker_session_timeout_ms=300,
    broker_heartbeat_interval_ms=50,
)
CLIENT = 4000


class KafkaSim:
    """A controller creating ``topics`` and three kafka-mode brokers on one simulated clock."""

    def __init__(self, topics, store=None) -> None:
        self.clock = SimClock()
        self.network = SimNetwork(self.clock, lambda *_: "any", random.Random(1), NetworkFaults())
        self.controller = Controller.for_cluster(
            CONFIG, self.clock, self.network, True, kafka_metadata=True, topics=topics, metadata_store=store
        )
        self.brokers = [
            Broker(b, CONFIG, SimulatedFileSystem(), self.clock, self.network, auto=True, kafka=True) for b in range(3)
        ]
        for b, broker in enumerate(self.brokers):
            broker.bootstrap(self.controller.broker_epochs[b], None)
        self.client = NodeEndpoint(CLIENT, self.network)
        self.network.register(CLIENT, self.client)
        self.responses = []

    def run(self, ms: int) -> None:
        self.clock.advance(ms)

    def produce(self, broker: int, partition_id: int, value: bytes) -> None:
        req = ProduceRequest(-1, 1000, partition_id, (WireRecord(-1, -1, None, value),))
        self.client.send_request(broker, ApiKey.PRODUCE, 0, req, self.responses.append)


def test_partitions_are_assigned_as_kafka_does_and_every_broker_hosts_every_one():
    sim = KafkaSim((("orders", 3), ("audit", 1)))
    sim.run(200)
    assert [(p.topic, p.index, p.replicas, p.leader) for p in sim.controller.partitions] == [
        ("orders", 0, (0, 1, 2), 0),
        ("orders", 1, (1, 2, 0), 1),
        ("orders", 2, (2, 0, 1), 2),
        ("audit", 0, (0, 1, 2), 0),
    ]
    for broker in sim.brokers:
        rm = broker.replica_manager
        assert rm.names == {("orders", 0): 0, ("orders", 1): 1, ("orders", 2): 2, ("audit", 0): 3}
        assert [rm.partitions[i].leader for i in range(4)] == [0, 1, 2, 0]
        assert rm.live_brokers == (0, 1, 2)


def test_each_partition_replicates_on_its_own_and_acks_all_completes():
    sim = KafkaSim((("orders", 3),))
    sim.run(200)
    for pid in range(3):
        sim.produce(pid, pid, f"record of {pid}".encode())
    sim.run(200)
    assert sorted((r.partition, r.error, r.base_offset) for r in sim.responses) == [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    for broker in sim.brokers:
        for pid in range(3):
            p = broker.replica_manager.partitions[pid]
            assert p.log.log_end_offset == 1 and p.log.read(0).records[0].value == f"record of {pid}".encode()
            assert p.high_watermark == 1 or not p.is_leader  # a follower learns the HW on its next fetch


def test_a_dead_broker_is_fenced_out_of_every_partition_and_its_leaderships_move():
    sim = KafkaSim((("orders", 3),))
    sim.run(200)
    sim.brokers[1].halt()
    sim.run(CONFIG.broker_session_timeout_ms + 100)
    assert [p.leader for p in sim.controller.partitions] == [0, 2, 2]  # orders-1's next replica in order: 2
    assert all(1 not in p.isr for p in sim.controller.partitions)
    for b in (0, 2):
        rm = sim.brokers[b].replica_manager
        assert rm.live_brokers == (0, 2) and rm.partitions[1].leader == 2


def test_unknown_partition_and_topic_requests_get_kafkas_errors():
    sim = KafkaSim((("orders", 1),))
    sim.run(200)
    sim.produce(0, 7, b"x")
    sim.run(10)
    assert sim.responses[-1].error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    c = sim.controller
    assert c.create_topic("orders", 2) == Errors.TOPIC_ALREADY_EXISTS
    assert c.create_topic("bad/name", 1) == Errors.INVALID_TOPIC_EXCEPTION
    assert c.create_topic("empty", 0) == Errors.INVALID_PARTITIONS


def test_a_restarted_controller_keeps_topics_epochs_and_producer_ids():
    fs = SimulatedFileSystem()
    store = FileMetadataStore(fs, "/controller/metadata.json")
    fs.makedirs("/controller")
    first = KafkaSim((("orders", 2),), store)
    first.run(200)
    first.brokers[0].halt()
    first.run(CONFIG.broker_session_timeout_ms + 100)
    before = [p.to_json() for p in first.controller.partitions]
    broker = first.brokers[2]
    manager = ProducerIdManager(2, broker.endpoint, lambda: broker.broker_epoch)
    # no block yet: COORDINATOR_LOAD_IN_PROGRESS (the client asks again), and a block asked for
    assert manager.generate() == (Errors.COORDINATOR_LOAD_IN_PROGRESS, -1)
    first.run(10)
    ids = [manager.generate()[1]]
    again = KafkaSim((("orders", 5), ("new", 1)), store)
    assert [p.to_json() for p in again.controller.partitions][:2] == before
    assert again.controller.topics == {"orders": (0, 1), "new": (2,)}
    assert again.controller.broker_epochs == first.controller.broker_epochs
    assert ids == [0] and again.controller.next_producer_id == PRODUCER_ID_BLOCK_SIZE  # never handed out twice


def test_producer_ids_come_without_a_pause_once_the_first_block_is_there():
    """RPCProducerIdManager: the next block is asked for when 90% of the current one is handed
    out, so a broker goes from one block to the next without answering COORDINATOR_LOAD_IN_PROGRESS;
    no id is handed out twice."""
    sim = KafkaSim((("orders", 1),))
    sim.run(200)
    broker = sim.brokers[0]
    manager = ProducerIdManager(0, broker.endpoint, lambda: broker.broker_epoch)
    assert manager.generate() == (Errors.COORDINATOR_LOAD_IN_PROGRESS, -1)
    sim.run(10)
    ids = []
    for _ in range(2 * PRODUCER_ID_BLOCK_SIZE):
        error, pid = manager.generate()
        assert error == Errors.NONE, len(ids)
        ids.append(pid)
        sim.run(1)
    assert len(set(ids)) == len(ids) == 2 * PRODUCER_ID_BLOCK_SIZE


def test_a_restarted_broker_is_caught_up_only_once_it_hosts_every_partition_of_its_registration():
    """BrokerLifecycleManager's initial catch-up: the controller's heartbeat answer says caught up
    once the broker applied every partition state the controller had when it registered, and not
    before (here the LeaderAndIsr of one partition is lost until a heartbeat shows it missing), so
    a Kafka listener enabled then never answers from a partial view."""
    sim = KafkaSim((("orders", 3),))
    sim.run(200)
    assert all(b.caught_up for b in sim.brokers)
    fs = sim.brokers[1].fs
    sim.brokers[1].halt()
    sim.run(CONFIG.broker_session_timeout_ms + 100)  # fenced: its leadership moved, partition epochs went up
    restarted = Broker(1, CONFIG, fs, sim.clock, sim.network, auto=True, incarnation=1, kafka=True)
    handle, lost, losing = restarted.endpoint.handlers[ApiKey.LEADER_AND_ISR], [], [True]

    def lossy(src, header, req):  # orders-2's LeaderAndIsrs lost until its first heartbeat was answered
        if req.partition == 2 and losing[0]:
            lost.append(req)
            return None
        return handle(src, header, req)

    restarted.endpoint.handlers[ApiKey.LEADER_AND_ISR] = lossy
    hosted = []
    restarted.on_caught_up = lambda: hosted.append(
        {pid: p.partition_epoch for pid, p in restarted.replica_manager.partitions.items()}
    )
    restarted.register()
    sim.run(CONFIG.broker_heartbeat_interval_ms * 3 // 2)  # registered, one heartbeat answered
    assert restarted.broker_epoch > 0 and lost and not restarted.caught_up
    assert sorted(restarted.replica_manager.partitions) == [0, 1]
    losing[0] = False
    sim.run(CONFIG.broker_heartbeat_interval_ms * 3)  # the heartbeat showed orders-2 missing: sent again
    assert restarted.caught_up and len(hosted) == 1
    registered = sim.controller.registration_epochs[1]
    assert len(registered) == 3 and all(hosted[0].get(pid, -1) >= e for pid, e in enumerate(registered)), (
        hosted,
        registered,
    )


def test_a_topic_of_its_own_min_insync_replicas_refuses_acks_all_below_it():
    """CreateTopics with min.insync.replicas 3: each broker's partitions of that topic hold it (the
    controller's LeaderAndIsr carries it), so with a broker down its acks=all writes are refused
    NOT_ENOUGH_REPLICAS while the cluster's other topic (min.insync.replicas 2) takes them."""
    sim = KafkaSim((("orders", 1),))
    assert sim.controller.create_topic("strict", 1, 3, 3) == Errors.NONE
    sim.run(200)
    assert [b.replica_manager.partitions[1].config.min_insync_replicas for b in sim.brokers] == [3, 3, 3]
    assert sim.brokers[0].replica_manager.partitions[0].config.min_insync_replicas == 2
    sim.brokers[2].halt()
    sim.run(CONFIG.broker_session_timeout_ms + 100)
    assert [p.isr for p in sim.controller.partitions] == [(0, 1), (0, 1)]
    sim.produce(0, 1, b"to strict")
    sim.produce(0, 0, b"to orders")
    sim.run(100)
    assert sorted((r.partition, r.error) for r in sim.responses) == [(0, Errors.NONE), (1, Errors.NOT_ENOUGH_REPLICAS)]


def test_create_topic_refuses_what_kafka_refuses_and_what_isrcheck_cannot_honour():
    c = KafkaSim((("orders", 1),)).controller
    assert c.check_new_topic("more", 1, 4)[0] == Errors.INVALID_REPLICATION_FACTOR  # Kafka: more than the brokers
    assert c.check_new_topic("zero", 1, 0)[0] == Errors.INVALID_REPLICATION_FACTOR
    assert c.check_new_topic("fewer", 1, 2) == (  # isrcheck: every partition on every broker
        Errors.INVALID_REPLICATION_FACTOR,
        "isrcheck replicates every partition on each of the cluster's 3 brokers: "
        "the replication factor must be 3 (or -1 for the default).",
    )
    assert c.check_new_topic("strict", 1, -1, 4)[0] == Errors.INVALID_CONFIG
    assert c.check_new_topic("ok", 2, 3, 3) == (Errors.NONE, "")
    assert c.topics == {"orders": (0,)}  # a check creates nothing


def test_a_deleted_topic_is_gone_from_every_broker_with_its_logs_and_comes_back_empty():
    """DeleteTopics: every broker stops the topic's partitions and deletes their logs and HW
    checkpoints; a broker down meanwhile deletes its logs when it is back (the controller sends it
    the tombstones with every other partition); a topic made again under the same name is new
    (new partition ids, empty logs); a restarted controller keeps the tombstones."""
    fs = SimulatedFileSystem()
    fs.makedirs("/controller")
    store = FileMetadataStore(fs, "/controller/metadata.json")
    sim = KafkaSim((("orders", 2),), store)
    sim.run(200)
    sim.produce(0, 0, b"before the deletion")
    sim.run(200)
    assert all(b.replica_manager.partitions[0].log.log_end_offset == 1 for b in sim.brokers)
    for b in sim.brokers:
        b.checkpoint_high_watermarks()
    down_fs = sim.brokers[1].fs
    sim.brokers[1].halt()
    assert sim.controller.delete_topic("orders") == Errors.NONE
    assert sim.controller.delete_topic("orders") == Errors.UNKNOWN_TOPIC_OR_PARTITION
    sim.run(200)
    for b in (sim.brokers[0], sim.brokers[2]):
        rm = b.replica_manager
        assert rm.names == {} and rm.partitions == {}
        assert rm.applied_partition_epochs == tuple(p.partition_epoch for p in sim.controller.partitions)
        assert not b.fs.exists("/var/lib/kafka/data/orders-0") and not b.fs.exists("/var/lib/kafka/data/orders-1")
        assert b.hw_checkpoints == {} and b.hw_checkpoint_file.read() == []
    assert down_fs.exists("/var/lib/kafka/data/orders-0")
    assert sim.controller.create_topic("orders", 1) == Errors.NONE
    restarted = Broker(1, CONFIG, down_fs, sim.clock, sim.network, auto=True, incarnation=1, kafka=True)
    restarted.register()
    sim.run(CONFIG.broker_session_timeout_ms)
    assert restarted.caught_up and restarted.replica_manager.names == {("orders", 0): 2}
    assert restarted.replica_manager.partitions[2].log.log_end_offset == 0  # not the old orders-0's record
    assert not down_fs.exists("/var/lib/kafka/data/orders-1")
    again = KafkaSim((), store)
    assert again.controller.topics == {"orders": (2,)}
    assert [p.deleted for p in again.controller.partitions] == [True, True, False]
