"""The controller: broker registration and liveness, leader election, ISR changes, topics."""

from .controller import (
    CONTROLLER_ID,
    DEFAULT_TOPIC,
    Controller,
    ControllerState,
    MetadataStore,
    PartitionRegistration,
    valid_topic_name,
)
from .metadata_store import FileMetadataStore

__all__ = [
    "CONTROLLER_ID",
    "DEFAULT_TOPIC",
    "Controller",
    "ControllerState",
    "FileMetadataStore",
    "MetadataStore",
    "PartitionRegistration",
    "valid_topic_name",
]
