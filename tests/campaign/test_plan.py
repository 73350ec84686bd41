"""Campaign bookkeeping without Spark: seed planning, resume ledger, atomic files, orphan cleanup."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isrcheck.conformance.campaign import plan
from isrcheck.conformance.campaign.executor import ROW_SCHEMA
from isrcheck.conformance.campaign.progress import done_within
from isrcheck.conformance.campaign.store import CampaignStore, atomic_write_json


def test_missing_subtracts_completed_ranges_in_any_order():
    assert plan.missing((0, 100), []) == [(0, 100)]
    assert plan.missing((0, 100), [(40, 60), (0, 10), (90, 120)]) == [(10, 40), (60, 90)]
    assert plan.missing((50, 60), [(0, 55)]) == [(55, 60)]
    assert plan.missing((0, 10), [(0, 5), (5, 10)]) == []


@pytest.mark.parametrize("tasks", [1, 2, 3, 7, 1000])
def test_split_covers_every_missing_seed_exactly_once(tasks):
    gaps = [(3, 17), (20, 21), (40, 75)]
    chunks = plan.split(gaps, tasks)
    seeds = [s for chunk in chunks for lo, hi in chunk for s in range(lo, hi)]
    assert seeds == [s for lo, hi in gaps for s in range(lo, hi)]
    sizes = [sum(hi - lo for lo, hi in chunk) for chunk in chunks]
    assert len(chunks) == min(tasks, 50) and max(sizes) - min(sizes) <= 1


def test_default_tasks_keeps_every_core_busy():
    assert plan.default_tasks(2000, 2) == 10
    assert plan.default_tasks(2000, 2) % 2 == 0
    assert plan.default_tasks(3, 8) == 3
    assert plan.default_tasks(10, 4) == 4


def _write_part(store, lo, hi):
    rows = [{"seed": s, "verdict": "pass", "coverage": []} for s in range(lo, hi)]
    store.part_path(lo, hi).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), store.part_path(lo, hi))


def test_ledger_counts_only_ranges_whose_parquet_file_exists(tmp_path):
    store = CampaignStore(tmp_path / "c", "kip-320")
    store.bind({"protocol": "kip-320", "steps": 10, "faults": "default"})
    _write_part(store, 0, 5)
    store.record_completed(0, 5, rows=5, failures=0)
    store.record_completed(5, 9, rows=4, failures=0)  # marker whose file vanished: not complete
    assert [(c.lo, c.hi) for c in store.completed()] == [(0, 5)]


def test_remove_orphans_deletes_unmarked_parquet_and_temp_files(tmp_path):
    store = CampaignStore(tmp_path / "c", "kip-320")
    store.bind({"protocol": "kip-320", "steps": 10, "faults": "default"})
    _write_part(store, 0, 5)
    store.record_completed(0, 5, rows=5, failures=0)
    _write_part(store, 5, 10)  # killed between the Parquet rename and the marker
    tmp = store.partition_dir / ".part-000000000010-000000000015.parquet.123.tmp"
    tmp.write_bytes(b"half a file")
    removed = {p.name for p in store.remove_orphans()}
    assert removed == {store.part_path(5, 10).name, tmp.name}
    assert sorted(p.name for p in store.partition_dir.iterdir()) == [store.part_path(0, 5).name]
    assert pq.read_table(store.runs).num_rows == 5


def test_bind_refuses_a_directory_of_another_campaign(tmp_path):
    store = CampaignStore(tmp_path / "c", "kip-320")
    store.bind({"protocol": "kip-320", "steps": 10, "faults": "default"})
    store.bind({"protocol": "kip-320", "steps": 10, "faults": "default"})  # same: resume
    with pytest.raises(ValueError, match="steps=10.*steps=20"):
        store.bind({"protocol": "kip-320", "steps": 20, "faults": "default"})
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        CampaignStore(tmp_path / "other", "kip-320").bind({"protocol": "kip-320"})


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    atomic_write_json(tmp_path / "a" / "x.json", {"b": 1, "a": [2]})
    assert json.loads((tmp_path / "a" / "x.json").read_text()) == {"a": [2], "b": 1}
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["x.json"]


def test_a_rerun_plans_the_same_ranges_minus_what_is_done():
    first = plan.plan_tasks((0, 100), 4, [])
    assert first == [[(0, 25)], [(25, 50)], [(50, 75)], [(75, 100)]]
    # Two tasks finished before the kill: the rerun plans exactly the two others, same bounds,
    # so a straggler of the killed run rewrites the same file rather than an overlapping one.
    assert plan.plan_tasks((0, 100), 4, [(0, 25), (50, 75)]) == [[(25, 50)], [(75, 100)]]
    # Ranges done by an earlier command with other cut points are still skipped.
    assert plan.plan_tasks((0, 100), 4, [(10, 60)]) == [[(0, 10)], [(60, 75)], [(75, 100)]]


def test_progress_counts_the_seeds_of_this_run_already_recorded(tmp_path):
    store = CampaignStore(tmp_path / "c", "kip-320")
    store.bind({"protocol": "kip-320", "steps": 10, "faults": "default"})
    for lo, hi in ((0, 5), (5, 10), (20, 30)):
        _write_part(store, lo, hi)
        store.record_completed(lo, hi, rows=hi - lo, failures=0)
    assert done_within(store, [(3, 8), (25, 40)]) == 5 + 5
