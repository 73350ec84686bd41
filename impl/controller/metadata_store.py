"""FileMetadataStore: the controller's metadata kept in one JSON file, replaced atomically on
every change (temporary file, fsync, rename, directory fsync), so that a restarted controller
knows the topics, each partition's leader epoch, ISR and ELR, the broker epochs and the next
producer ids: what KRaft's metadata log and its snapshots keep."""

from __future__ import annotations

import json

from ..storage import FileSystem


class FileMetadataStore:
    def __init__(self, fs: FileSystem, path: str) -> None:
        self.fs, self.path = fs, path

    def load(self) -> dict | None:
        """The metadata, None before the first save; ValueError naming the file if it is unreadable."""
        if not self.fs.exists(self.path):
            return None
        try:
            metadata = json.loads(self.fs.read_file(self.path))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: not the controller's metadata ({exc})") from None
        if not isinstance(metadata, dict):
            raise ValueError(f"{self.path}: not the controller's metadata (not a JSON object)")
        return metadata

    def save(self, metadata: dict) -> None:
        self.fs.write_file_atomically(self.path, json.dumps(metadata, sort_keys=True).encode())
