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
