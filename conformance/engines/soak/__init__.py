"""Soak: the implementation as real OS processes under clients and wall-clock faults, its history checked."""
