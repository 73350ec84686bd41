"""The campaign directory: its identity, the ledger of completed seed ranges, atomic files.

Layout of ``DIR``::

    campaign.json                       what the seeds mean (protocol, steps, faults, config)
    runs/protocol=<P>/part-<lo>-<hi>.parquet   one file per completed seed range [lo, hi)
    ranges/<lo>-<hi>.json               completion marker, written only after the Parquet rename
    failures/<id>.json, <id>.original.json, index.json
    summary.json

Every file is written to a hidden temporary name (``.``-prefixed: Spark and pyarrow skip those),
fsynced and renamed, so a killed campaign never leaves a half-written file a reader would trip on.
A Parquet file whose marker is missing (killed between the two renames) is an orphan: it is
deleted on the next start and its range is run again. A marked file found damaged later is moved
aside (``.<name>.damaged``, hidden from readers), never deleted, and its range is run again.

The directory belongs to one campaign (``campaign.json``: protocol, seed range, steps, faults);
a command asking for another is refused before anything is written, so the failures and the
summary already there always describe the seeds the directory holds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from isrcheck.conformance.vocabulary import read_text

FORMAT = 1


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file, or all of the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def atomic_write_json(path: Path, obj: object) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def _fsync_dir(directory: Path) -> None:
    # The rename is only durable once the directory entry is; not every OS lets us open a dir.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Completed:
    """A completed seed range [lo, hi) as recorded by its marker."""

    lo: int
    hi: int
    rows: int
    failures: int


class CampaignStore:
    """Paths of one campaign directory, its identity check and its ledger of completed ranges."""

    def __init__(self, root: Path | str, protocol: str):
        self.root = Path(root)
        self.protocol = protocol
        self.identity_path = self.root / "campaign.json"
        self.runs = self.root / "runs"
        self.partition_dir = self.runs / f"protocol={protocol}"
        self.ranges = self.root / "ranges"
        self.failures = self.root / "failures"
        self.summary_path = self.root / "summary.json"

    # -- identity ---------------------------------------------------------------------------
    def bind(self, identity: dict) -> None:
        """Create the directory for ``identity`` or check that it already holds the same campaign.

        ``identity``'s keys are the options that set them (``steps``: ``--steps``). Raises
        ValueError naming the first difference: rows of another identity would mix schedules that
        mean different things under the same seed, and its failures and summary would replace
        those of the seeds already here.
        """
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"--out {self.root} exists and is not a directory")
        wanted = {"format": FORMAT, **identity}
        if self.identity_path.exists():
            try:
                have = json.loads(read_text(self.identity_path, "a campaign's identity", error=ValueError))
                if not isinstance(have, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError) as exc:
                raise ValueError(f"{self.identity_path} is unreadable: {exc}") from None
            missing = [k for k in wanted if k not in have]
            if missing:  # a campaign.json of an older isrcheck: compare what its summary says
                have = {**{k: v for k, v in self._recorded_by_summary().items() if k in missing}, **have}
            for key in [k for k in wanted if k in have] + [k for k in have if k not in wanted]:
                if have.get(key) != wanted.get(key):
                    option = "format" if key == "format" else f"--{key}"
                    raise ValueError(
                        f"--out {self.root} was made with {option} {have.get(key)}, not "
                        f"{wanted.get(key)}; rerun with the same options to resume, "
                        "or use another --out"
                    )
            if missing:  # record the rest, so later runs compare all of it
                atomic_write_json(self.identity_path, {**wanted, **have})
            return
        # A run killed while creating the directory leaves at most a hidden temporary file.
        if self.root.exists() and any(not p.name.startswith(".") for p in self.root.iterdir()):
            raise ValueError(f"--out {self.root} is not empty and holds no campaign.json")
        atomic_write_json(self.identity_path, wanted)

    def _recorded_by_summary(self) -> dict:
        """The seed range of summary.json, for a campaign.json that did not record it (older
        isrcheck): a finished campaign's range is the one its summary describes."""
        try:
            summary = json.loads(read_text(self.summary_path, "a campaign summary", error=ValueError))
            return {k: summary[k] for k in ("seed", "schedules")}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    # -- ledger -----------------------------------------------------------------------------
    def part_path(self, lo: int, hi: int) -> Path:
        return self.partition_dir / f"part-{lo:012d}-{hi:012d}.parquet"

    def marker_path(self, lo: int, hi: int) -> Path:
        return self.ranges / f"{lo:012d}-{hi:012d}.json"

    def record_completed(self, lo: int, hi: int, rows: int, failures: int) -> None:
        """Mark [lo, hi) done; called only after its Parquet file was renamed into place."""
        atomic_write_json(
            self.marker_path(lo, hi),
            {
                "lo": lo,
                "hi": hi,
                "rows": rows,
                "failures": failures,
                "file": str(self.part_path(lo, hi).relative_to(self.root)),
            },
        )

    def completed(self) -> list[Completed]:
        """Completed ranges, sorted; a marker without its Parquet file does not count."""
        done = []
        if not self.ranges.is_dir():
            return done
        for marker in sorted(self.ranges.glob("[0-9]*.json")):
            try:
                m = json.loads(read_text(marker, "a range marker", error=ValueError))
                entry = Completed(int(m["lo"]), int(m["hi"]), int(m["rows"]), int(m["failures"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # markers are written atomically; an unreadable one was not ours
            if self.part_path(entry.lo, entry.hi).exists():
                done.append(entry)
        return sorted(done, key=lambda c: c.lo)

    def set_aside(self, path: Path) -> Path:
        """Rename ``path`` to a hidden ``.<name>.damaged`` beside it (numbered if taken), out of
        every reader's way but kept."""
        aside = path.with_name(f".{path.name}.damaged")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f".{path.name}.{n}.damaged")
        os.replace(path, aside)
        _fsync_dir(path.parent)
        return aside

    def remove_orphans(self) -> list[Path]:
        """Delete temporary files and Parquet files without a marker (a run killed mid-rename)."""
        removed = []
        done = {(c.lo, c.hi) for c in self.completed()}
        for directory in (self.partition_dir, self.ranges, self.failures, self.root):
            if not directory.is_dir():
                continue
            for path in sorted(directory.iterdir()):
                if path.name.startswith(".") and path.name.endswith(".tmp"):
                    path.unlink(missing_ok=True)
                    removed.append(path)
        if self.partition_dir.is_dir():
            for path in sorted(self.partition_dir.glob("part-*.parquet")):
                lo, hi = (int(x) for x in path.stem.split("-")[1:3])
                if (lo, hi) not in done:
                    path.unlink(missing_ok=True)
                    removed.append(path)
        return removed
