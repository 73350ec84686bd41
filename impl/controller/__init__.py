"""The controller: broker registration and liveness, leader election, ISR changes."""
from .controller import CONTROLLER_ID, Controller, ControllerState

__all__ = ["CONTROLLER_ID", "Controller", "ControllerState"]
