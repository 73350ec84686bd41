"""The Kafka protocol on a broker: what lets Kafka's own clients, tools and applications use it.

``KafkaServer`` is Kafka's SocketServer for client connections (size-prefixed frames, request
headers v1 and v2, one request of a connection at a time so that responses keep their order);
``KafkaApis`` answers each request from the broker's ReplicaManager, the same partitions,
purgatories and logs that replication runs on. Requests and responses are encoded and decoded by
kafka-python's protocol classes, which are generated from Kafka's own message schemas.
"""

from .apis import KafkaApis
from .registry import APIS
from .server import KafkaServer
from .settings import KafkaSettings

__all__ = ["APIS", "KafkaApis", "KafkaServer", "KafkaSettings"]
