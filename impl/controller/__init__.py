"""The controller: broker registration and liveness, leader election, ISR changes, topics."""
from .controller import (
    CONTROLLER_ID, DEFAULT_TOPIC, Controller, ControllerState, MetadataStore, PartitionRegistration,
    valid_topic_name,
)

__all__ = ["CONTROLLER_ID", "DEFAULT_TOPIC", "Controller", "ControllerState", "MetadataStore",
           "PartitionRegistration", "valid_topic_name"]
