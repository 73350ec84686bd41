"""Campaign bookkeeping without Spark: seed planning, resume ledger, atomic files, orphan cleanup."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from isrcheck.conformance.engines.campaign import plan
from isrcheck.conformance.engines.campaign.executor import ROW_SCHEMA
from isrcheck.conformance.engines.campaign.progress import done_within
from isrcheck.conformance.engines.campaign.store import CampaignStore, atomic_write_json


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
    with pytest.raises(ValueError, match="was made with --steps 10, not 20"):
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


def test_bind_names_the_option_that_differs_and_writes_nothing(tmp_path):
    store = CampaignStore(tmp_path / "c", "kip-320")
    made = {"protocol": "kip-320", "seed": 0, "schedules": 30, "steps": 100, "faults": "default"}
    store.bind(made)
    before = store.identity_path.read_bytes()
    for key, value in (("protocol", "kip-101"), ("seed", 5), ("schedules", 45), ("steps", 50), ("faults", "heavy")):
        with pytest.raises(ValueError, match=f"--out .* was made with --{key} {made[key]}, not {value};"):
            store.bind({**made, key: value})
    assert store.identity_path.read_bytes() == before


def test_bind_takes_an_older_campaign_s_seed_range_from_its_summary(tmp_path):
    store = CampaignStore(tmp_path / "c", "kip-320")
    store.bind({"protocol": "kip-320", "steps": 100, "faults": "default"})  # recorded no range
    atomic_write_json(store.summary_path, {"seed": 0, "schedules": 30})
    made = {"protocol": "kip-320", "seed": 0, "schedules": 30, "steps": 100, "faults": "default"}
    with pytest.raises(ValueError, match="was made with --schedules 30, not 40"):
        store.bind({**made, "schedules": 40})
    store.bind(made)
    assert json.loads(store.identity_path.read_text()) == {"format": 1, **made}


def test_check_part_finds_truncated_damaged_and_foreign_files(tmp_path):
    from isrcheck.conformance.engines.campaign.executor import check_part

    store = CampaignStore(tmp_path / "c", "kip-320")
    for lo, hi, seeds in (
        (0, 5, range(0, 5)),
        (5, 10, range(5, 10)),
        (10, 15, range(10, 15)),
        (15, 20, [15, 16, 16, 18, 19]),
    ):
        rows = [{"seed": s, "verdict": "pass", "coverage": ["x"] * 50} for s in seeds]
        store.part_path(lo, hi).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), store.part_path(lo, hi), write_page_checksum=True)
    assert check_part(store.part_path(0, 5), 0, 5, 5) is None
    assert "marker records 4 rows for 5 seeds" in check_part(store.part_path(0, 5), 0, 5, 4)
    assert "seed statistics say 0..4, not 20..24" in check_part(store.part_path(0, 5), 20, 25, 5)
    assert "seeds are not 15..19 in order" in check_part(store.part_path(15, 20), 15, 20, 5)
    truncated = store.part_path(5, 10)
    truncated.write_bytes(truncated.read_bytes()[:-30])
    assert check_part(truncated, 5, 10, 5)
    damaged = store.part_path(10, 15)
    data = bytearray(damaged.read_bytes())
    for i in range(100, 140):  # inside the first data page; the footer stays intact
        data[i] ^= 0x5A
    damaged.write_bytes(bytes(data))
    assert check_part(damaged, 10, 15, 5)  # a page checksum, or a page header, no longer agrees
    aside = store.set_aside(damaged)
    assert aside.name == f".{damaged.name}.damaged" and not damaged.exists()
    assert aside.read_bytes() == bytes(data)
    damaged.write_bytes(b"again")
    assert store.set_aside(damaged).name == f".{damaged.name}.2.damaged" and aside.exists()
