"""``isrcheck soak``: brokers and the controller as real processes under concurrent clients and
wall-clock faults, the history checked at the end."""
import asyncio
import json
import os

from isrcheck.conformance.engines.soak.driver import SoakResult, _Clients, soak_config
from isrcheck.impl.real.processes import ProcessCluster


def test_a_soak_with_process_crashes_and_clean_shutdowns_keeps_every_acknowledged_write(isrcheck_cli, tmp_path):
    proc = isrcheck_cli("soak", "--protocol", "kip-320", "--duration", "8", "--faults", "crash", "--seed", "3",
                        "--dir", tmp_path / "soak", "--json", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["anomalies"] == [] and result["acked"] > 0 and result["final_hw"] >= result["acked"]
    assert result["faults"] and {kind for _t, kind, _b in result["faults"]} <= {"clean", "process"}
    history = (tmp_path / "soak" / "history.jsonl").read_text().splitlines()
    acked = [op for op in map(json.loads, history) if op["type"] == "produce" and op["error"] == "NONE"]
    assert len(acked) == result["acked"]
    for b in range(3):  # real log directories, with segments and checkpoints
        assert os.path.exists(tmp_path / "soak" / f"broker-{b}" / "isr-0" / "00000000000000000000.log")


async def _power_loss_of_the_leader(directory):
    config = soak_config("kip-320", 3, 2)
    cluster = ProcessCluster(config, directory)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, cluster.start)
    try:
        clients = _Clients(config, cluster, open(os.path.join(directory, "history.jsonl"), "w"))
        result = SoakResult("kip-320", 0)
        for _ in range(20):
            await clients.produce(result)
        pids = {b: cluster.processes[b].pid for b in range(3)}
        await loop.run_in_executor(None, cluster.crash, 0, "power")
        return result, cluster.lost_bytes, pids, cluster.alive(0)
    finally:
        await loop.run_in_executor(None, cluster.stop)


def test_a_power_loss_kills_the_process_and_discards_what_was_not_fsynced(tmp_path):
    result, lost, pids, alive = asyncio.run(_power_loss_of_the_leader(str(tmp_path)))
    assert result.acked == 20  # acks=all: on every replica's page cache, fsynced by none (no flush policy)
    assert len(set(pids.values())) == 3 and not alive
    assert lost > 0


class _CappedLeader:
    """Clients of a cluster whose broker 1 leads a log of ``size`` records, each fetch answer
    holding at most ``cap`` batches of one record (as fetch.max.bytes caps a real one)."""

    def __init__(self, size: int, cap: int) -> None:
        self.n, self.size, self.cap = 3, size, cap
        self.fetches = []

    async def consume(self, broker=None, offset=0):
        from isrcheck.impl.clients import ConsumeResult

        self.fetches.append((broker, offset))
        if broker != 1:
            return ConsumeResult(broker, "NOT_LEADER_OR_FOLLOWER", -1, (), -1)
        end = min(offset + self.cap, self.size)
        return ConsumeResult(broker, "NONE", self.size, tuple((o, str(o + 1).encode()) for o in range(offset, end)), end)


def test_the_final_read_is_the_whole_log_past_one_fetch_answer():
    """Every acknowledged write is in a log longer than one fetch answer: the final read fetches
    on to the HW, and the check finds nothing missing."""
    from isrcheck.conformance.engines.soak.driver import _check, _final_read
    from isrcheck.model import Step
    from isrcheck.model.history import EMPTY_HISTORY

    clients = _CappedLeader(size=10, cap=4)
    broker, hw, records = asyncio.run(_final_read(clients, acked_end=10, timeout_s=30))
    assert (broker, hw) == (1, 10) and records == tuple((o, str(o + 1).encode()) for o in range(10))
    assert clients.fetches[-3:] == [(1, 0), (1, 4), (1, 8)]  # fetched on from each answer's next offset
    history = EMPTY_HISTORY
    for o in range(10):
        history = history.after(Step.from_json({"step": "produce", "replica": 1, "acks": -1}),
                                [{"type": "produce", "replica": 1, "record": o + 1, "records": 1, "acks": -1,
                                  "error": "NONE", "offset": o}], None)
    assert _check("kip-320", soak_config("kip-320", 3, 2), history, broker, records) == []
    assert _check("kip-320", soak_config("kip-320", 3, 2), history, broker, records[:4]) == [
        "NoLostAckedWrite", "LeaderCompleteness"]  # what one capped answer alone shows
