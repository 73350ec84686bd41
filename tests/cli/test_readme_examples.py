"""The shell examples of README.md and of every docs/*.md page, read from the pages and run as
written, show what the text says.

Each example is found by its text on its page (a changed or moved example fails here until its
test follows), run as a program, and checked for the exit code and the output its comment or the
surrounding text promises. Placeholders (``FILE.json``, ``P``, ``[--option]``) are filled in with
a shipped scenario. The long ones (explorations of the default scope, Spark campaigns, a
standalone cluster, a fresh install) are marked ``slow``; where a smaller run shows the same, the
default run has it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
SCENARIO = "specs/scenarios/kip101-scenario1.json"  # FILE.json: passes on kip-320, NoLostAckedWrite on hw-truncation
# an inline command naming a placeholder (P, FILE.json, OUT, CAMPAIGN_DIR, ...) or an optional part is syntax, not an example
PLACEHOLDER = re.compile(r"\b(P|N|S|[A-Z][A-Z_]*[A-Z](\.json|\.html)?)\b|\[")


def _page_examples(page: str) -> list[str]:
    """Every command of a page's sh blocks (and of plain blocks, the lines that start with
    ``isrcheck``), comments cut, continuation lines joined; and every complete ``isrcheck``
    command quoted inline."""
    text = (ROOT / page).read_text(encoding="utf-8")
    commands, block = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            block = None if block is not None else line[3:].strip()
            continue
        if block in ("sh", "") and line.strip():
            if block == "" and not line.startswith("isrcheck "):
                continue
            commands.append(line)
    joined = "\n".join(commands).replace("\\\n", " ")
    out = [" ".join(re.sub(r"\s+#.*$", "", c).split()) for c in joined.splitlines()]
    inline = re.findall(r"`(isrcheck [^`]+)`", text)
    return out + [c for c in inline if not PLACEHOLDER.search(c)]


def _examples() -> list[str]:
    return [command for page in PAGES for command in _page_examples(page)]


def example(text: str) -> str:
    """``text`` as a page has it: an example that changed fails the test that runs it."""
    assert text in _examples(), f"no page has the example {text!r} any more"
    return text


ENV = {
    **os.environ,
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    "PYSPARK_PYTHON": sys.executable,
}


def run(
    command: str, cwd: Path = ROOT, timeout: float = 600, fill: dict | None = None, options: bool = True
) -> subprocess.CompletedProcess:
    """Run a page's command line with bash, this environment's ``isrcheck`` first on the PATH:
    placeholders replaced by ``fill``, optional ``[--option value]`` parts taken (or left out)."""
    for placeholder, value in (fill or {}).items():
        command = command.replace(placeholder, value)
    command = re.sub(r" ?\[(--[^]]*)\]", r" \1" if options else "", command)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)


# README and docs/apache-kafka.md: Apache Kafka started, and soaked
KAFKA_EXAMPLE = "isrcheck kafka --replicas 3 --dir kafka-cluster --port 19092 --topic orders:3 &"
KAFKA_SOAK = "isrcheck soak --cluster kafka --faults all --duration 120 --dir soak-kafka"
# docs/apache-kafka.md: experiments on isrcheck's cluster and on Apache Kafka
EXPERIMENT = "isrcheck experiment not-enough-replicas --cluster isrcheck --repeat 1 --dir experiments-isrcheck"
EXPERIMENT_KAFKA = (
    "isrcheck experiment last-replica-standing --cluster kafka:4.0.2 --elr off --repeat 5 --dir experiments-kafka"
)
# docs/figures.md: the explorer at the disk faults' two-broker scope
DISK_SCOPE = (
    "isrcheck explore --protocol kip-320 --replicas 2 --min-isr 2 --max-records 1 --max-epoch 2 --max-crashes 1 "
    "--max-power-losses 1 --torn-writes --garbage-tails --corruptions 1 --disk-failures 1 --fsync-failures 1 "
    "--flushes"
)
COVERED = {
    # each page's sh blocks in its order, then the complete commands it quotes inline
    "README.md": {
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && isrcheck fuzz --protocol kip-320 --schedules 2000 --out campaigns/kip-320",
        'python3 -m venv .venv && . .venv/bin/activate && pip install ".[dev]" && python -m pytest -n auto',
        "isrcheck explore --protocol hw-truncation --replicas 2 --min-isr 1 --max-records 1 --max-epoch 3 --max-crashes 1",
        "isrcheck explore --protocol kip-320 --replicas 2 --min-isr 1 --max-records 1 --max-epoch 3 --max-crashes 1",
        "isrcheck check specs/scenarios/kip101-scenario1.json",
        "isrcheck check specs/scenarios/kip101-scenario1.json --protocol hw-truncation",
        "isrcheck report specs/scenarios/kip101-scenario2.json --protocol hw-truncation --html kip101-scenario2.html",
        "isrcheck report campaigns/kip-320 --html campaigns/kip-320/report",
        "isrcheck prove",
        "isrcheck sim",
        "isrcheck gate",
        "isrcheck soak",
        "isrcheck fuzz",
        "isrcheck validate",
        "isrcheck fuzz --protocol kip-966 --faults all --schedules 200 --out campaigns/kip-966-all",
        'isrcheck fuzz --protocol kip-101 --schedules 2000 --master "local[2]" --out campaigns/kip-101',
        'isrcheck fuzz --guided --protocol kip-279 --schedules 8250 --rounds 33 --steps 60 --master "local[2]" '
        "--out campaigns/kip-279",
        "isrcheck prove --invariant",
        "isrcheck serve --replicas 3 --dir kafka-data --topic orders:3 &",
        "kcat -L -b 127.0.0.1:9092",
        "printf 'a\\nb\\nc\\n' | kcat -P -b 127.0.0.1:9092 -t orders -p 0",
        "kcat -C -b 127.0.0.1:9092 -t orders -p 0 -o beginning -e",
        "isrcheck serve",
        KAFKA_EXAMPLE,
        KAFKA_SOAK,
        "isrcheck kafka",
        "isrcheck experiment",
    },
    "docs/apache-kafka.md": {
        KAFKA_EXAMPLE,
        "isrcheck kafka",
        "isrcheck kafka --help",
        "isrcheck kafka --fetch --kafka-version 4.0.2",
        "isrcheck experiment",
        EXPERIMENT,
        EXPERIMENT_KAFKA,
    },
    "docs/campaigns.md": {
        "isrcheck fuzz --protocol kip-320 --schedules 2000 --out campaigns/kip-320",
        "isrcheck fuzz --protocol hw-truncation --schedules 500 --seed 1000 --steps 150 --master local[2]",
        "isrcheck check campaigns/hw-truncation/failures/violation-WeakIsr.json",
        "spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077 &",
        "spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:7077 --cores 2 --work-dir /tmp/spark-work &",
        "isrcheck fuzz --protocol kip-320 --schedules 200000 --master spark://127.0.0.1:7077 --out /shared/campaigns/kip-320",
        "spark-submit --master spark://127.0.0.1:7077 --conf spark.executor.cores=2 "
        '"$(python -c \'import isrcheck.conformance.engines.campaign as c, os; print(os.path.join(os.path.dirname(c.__file__), "__main__.py"))\')" '
        "--protocol kip-320 --schedules 200000 --out /shared/campaigns/kip-320",
        "isrcheck fuzz",
        "isrcheck cover",
        "isrcheck check",
        "isrcheck explore",
        "isrcheck sim",
    },
    "docs/ci.md": {
        "isrcheck gate --junit-xml gate.xml --html gate-report",
        "python -m pytest --isrcheck tests/corpus",
        "python -m pytest --isrcheck specs/scenarios",
        "isrcheck gate",
        "isrcheck report",
        "isrcheck check",
    },
    "docs/conformance.md": {
        "isrcheck check FILE.json --json",
        "isrcheck check FILE.json --model-only",
        "isrcheck check FILE.json --trace",
        "isrcheck check FILE.json --expected",
        "isrcheck check FILE.json --strict",
        "isrcheck shrink FILE.json -o SMALL.json [--protocol P] [--time-budget 10] [--keep-budget default]",
        "isrcheck explore --protocol kip-101 --replay-on-impl --json",
        "isrcheck check",
        "isrcheck fuzz",
    },
    "docs/figures.md": {
        "isrcheck check",
        "isrcheck soak",
        "isrcheck kafka",
        "isrcheck fuzz",
        "isrcheck cover",
        "isrcheck fuzz --protocol kip-320 --schedules 2000",
        DISK_SCOPE,
    },
    "docs/kafka.md": {
        "isrcheck serve --replicas 3 --dir kafka-data --topic orders:3",
        "isrcheck serve",
    },
    "docs/model.md": {
        "isrcheck explore --protocol kip-279 --save cex/",
        "isrcheck check cex/kip-279-StrongIsr.json",
        "isrcheck explore --protocol kip-320 --json",
        "isrcheck explore --protocol kip-320 --replicas 2 --min-isr 1 --unclean-election --max-records 1",
        'isrcheck explore --protocol kip-320 --replicas 2 --max-records 1 --max-power-losses 2 --crash-kinds "" '
        "--no-budget --stop-at-first",
        'isrcheck explore --protocol kip-320 --replicas 2 --max-records 1 --max-power-losses 2 --crash-kinds ""',
        "isrcheck explore",
    },
    "docs/processes.md": {
        "isrcheck soak --protocol kip-966 --duration 120 --faults all --dir runs/kip-966",
        "isrcheck serve",
        'isrcheck check specs/scenarios/torn-power-loss.json --sut "python -m isrcheck.impl.sut --processes"',
        "isrcheck soak",
    },
    "docs/invariants.md": {
        "isrcheck prove --invariant --protocol kip-320 --replicas 2 --min-isr 1 --max-records 1 --max-epoch 3 "
        "--max-crashes 1 --save kip-320-two.json",
        "isrcheck prove --check-invariant kip-320-two.json",
        "isrcheck prove --invariant",
    },
    "docs/prove.md": {
        "isrcheck prove --protocol hw-truncation --replicas 1 --min-isr 1 --max-records 1 --max-epoch 1 --max-crashes 1 "
        '--max-power-losses 1 --crash-kinds "" --bounces 1 --depth 5 --save cex/',
        "isrcheck prove --protocol kip-320 --replicas 1 --min-isr 1 --max-records 1 --max-epoch 1 --property "
        "HighWatermarkBound --induction",
        "isrcheck prove",
        "isrcheck check",
    },
    "docs/replication.md": {
        "isrcheck sim --protocol kip-320 --replicas 3 --seed 1 --steps 400 [--crash-kinds clean,process] [--json]",
        "isrcheck sim",
    },
    "docs/steps.md": {"isrcheck serve", "isrcheck sim", "isrcheck soak", "isrcheck validate"},
    "docs/storage.md": {"isrcheck dump-log"},
    "docs/validate.md": {"isrcheck soak", "isrcheck sim", "isrcheck validate"},
    "docs/sut-protocol.md": {
        'isrcheck check SCHEDULE.json --sut "java -jar my-broker-sut.jar"',
        'isrcheck fuzz --protocol kip-320 --schedules 2000 --sut "./my-sut"',
        "isrcheck shrink FAILING.json -o small.json --sut tcp://127.0.0.1:9400",
        'isrcheck check specs/scenarios/kip101-scenario1.json --protocol hw-truncation --sut "python -m isrcheck.impl.sut"',
        'isrcheck fuzz --protocol hw-truncation --schedules 40 --steps 60 --sut "python -m isrcheck.impl.sut" '
        "--out campaigns/hw-truncation-sut",
    },
}
BARE = {
    "isrcheck check",
    "isrcheck cover",
    "isrcheck dump-log",
    "isrcheck experiment",
    "isrcheck explore",
    "isrcheck fuzz",
    "isrcheck kafka",
    "isrcheck gate",
    "isrcheck prove",
    "isrcheck report",
    "isrcheck serve",
    "isrcheck sim",
    "isrcheck soak",
    "isrcheck validate",
}


def test_the_disk_fault_scope_is_explored_completely_without_violation():
    """docs/figures.md, disk faults: kip-320 with garbage tails, a corruption, a disk failure and a
    failed fsync in scope is explored completely; what breaks, breaks only outside its budget."""
    proc = run(example(DISK_SCOPE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "39,168 distinct states" in proc.stdout and ", complete" in proc.stdout
    assert "no property violated within its fault budget" in proc.stdout


@pytest.mark.parametrize("page", PAGES)
def test_every_example_of_the_page_has_a_test_here(page):
    assert set(_page_examples(page)) == COVERED.get(page), f"{page}: its examples and COVERED differ"


def test_every_page_listed_here_exists():
    assert sorted(COVERED) == sorted(PAGES)


# -- the default run -------------------------------------------------------------------------------


def test_prove_examples(tmp_path):
    bmc = example(
        "isrcheck prove --protocol hw-truncation --replicas 1 --min-isr 1 --max-records 1 --max-epoch 1 "
        '--max-crashes 1 --max-power-losses 1 --crash-kinds "" --bounces 1 --depth 5 --save cex/'
    )
    proc = run(bmc, cwd=tmp_path)
    # the only replica's power loss with min ISR 1 is past the budget: no violation, but the search
    # stopped there, so prove exits 1
    assert proc.returncode == 1, proc.stderr
    assert "NoLostAckedWrite broken only outside its fault budget after 4 transitions" in proc.stdout
    assert "violated" not in proc.stdout
    replay = run(f"isrcheck check {tmp_path / 'cex' / 'hw-truncation-NoLostAckedWrite.json'}")
    assert replay.returncode == 0 and "NoLostAckedWrite fails at step 3 outside its fault budget" in replay.stdout
    assert replay.stdout.rstrip().endswith("-> as expected")
    proc = run(
        example(
            "isrcheck prove --protocol kip-320 --replicas 1 --min-isr 1 --max-records 1 --max-epoch 1 "
            "--property HighWatermarkBound --induction"
        )
    )
    assert proc.returncode == 0 and proc.stdout.startswith("HighWatermarkBound: proved (k=1")


def test_check_a_scenario_under_another_protocol_names_its_property_as_expected():
    proc = run(example("isrcheck check specs/scenarios/kip101-scenario1.json --protocol hw-truncation"))
    assert proc.returncode == 1, proc.stderr
    assert "[hw-truncation]: violation of NoLostAckedWrite" in proc.stdout
    assert "truncated its log to offset 0 (its HW) at step 9" in proc.stdout.splitlines()[0]  # what went wrong
    assert "Every acks=all write answered NONE is" in proc.stdout  # the property in words
    assert "broker 0 (down):" in proc.stdout and "broker 1 (leader):" in proc.stdout  # every broker's state
    assert proc.stdout.rstrip().endswith("expected: violation of NoLostAckedWrite -> as expected")


def test_check_a_scenario_on_the_variant_it_names():
    proc = run(example("isrcheck check specs/scenarios/kip101-scenario1.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("kip101-scenario1 [kip-320]: pass")
    assert proc.stdout.rstrip().endswith("expected: pass -> as expected")


def test_the_tour_explores_one_small_scope_on_two_variants():
    proc = run(
        example(
            "isrcheck explore --protocol hw-truncation --replicas 2 --min-isr 1 --max-records 1 "
            "--max-epoch 3 --max-crashes 1"
        )
    )
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"\b[2-9]\d\d distinct states, .*, complete", proc.stdout)  # a few hundred
    assert "WeakIsr violated after 11 steps" in proc.stdout and "StrongIsr violated after 14 steps" in proc.stdout
    assert "LEO/HW" in proc.stdout and "controller: leader, leader epoch, ISR" in proc.stdout  # the table's legend
    strong = proc.stdout[proc.stdout.index("StrongIsr violated") :]  # crash, restart, truncate, back in the ISR
    for step in (
        "crash replica=1",
        "restart replica=1",
        "deliver_leader_and_isr replica=1",
        "handle_alter_partition replica=0",
    ):
        assert step in strong
    proc = run(
        example(
            "isrcheck explore --protocol kip-320 --replicas 2 --min-isr 1 --max-records 1 --max-epoch 3 --max-crashes 1"
        )
    )
    assert proc.returncode == 0, proc.stderr
    assert ", complete" in proc.stdout and "no property violated" in proc.stdout


def test_check_through_the_driver_protocol_gives_the_in_process_verdict():
    proc = run(
        example(
            "isrcheck check specs/scenarios/kip101-scenario1.json --protocol hw-truncation "
            '--sut "python -m isrcheck.impl.sut"'
        )
    )
    assert proc.returncode == 1, proc.stderr
    assert "[hw-truncation]: violation of NoLostAckedWrite" in proc.stdout


def test_check_with_brokers_as_processes():
    proc = run(
        example('isrcheck check specs/scenarios/torn-power-loss.json --sut "python -m isrcheck.impl.sut --processes"')
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torn-power-loss [kip-320]: pass (13 steps)" in proc.stdout


def test_check_options_on_a_schedule_file(tmp_path):
    doc = json.loads(run(example("isrcheck check FILE.json --json"), fill={"FILE.json": SCENARIO}).stdout)
    assert {"verdict", "property", "step", "diff", "trace_hash", "coverage"} <= set(doc)
    assert doc["verdict"] == "pass" and doc["as_expected"] is True

    proc = run(example("isrcheck check FILE.json --model-only"), fill={"FILE.json": SCENARIO})
    assert proc.returncode == 0 and "[kip-320]: pass" in proc.stdout

    proc = run(example("isrcheck check FILE.json --trace"), fill={"FILE.json": SCENARIO})
    assert proc.returncode == 0 and proc.stdout.startswith("initial state:")
    assert "step 0: {'step': 'produce'" in proc.stdout and "-> {'type': 'produce'" in proc.stdout

    gate = example("isrcheck check FILE.json --expected")
    assert run(gate, fill={"FILE.json": SCENARIO}).returncode == 0  # kip-320 passes, as the file expects
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            {
                **json.loads((ROOT / SCENARIO).read_text()),
                "protocol": "hw-truncation",
                "expected": {"hw-truncation": {"verdict": "pass"}},
            }
        )
    )
    proc = run(gate, fill={"FILE.json": str(other)})
    assert proc.returncode == 1 and "NOT as expected" in proc.stdout

    strict = example("isrcheck check FILE.json --strict")
    assert run(strict, fill={"FILE.json": SCENARIO}).returncode == 0  # no step of a scenario is refused
    refused = tmp_path / "refused.json"
    refused.write_text(json.dumps({"version": 1, "protocol": "kip-320", "steps": [{"step": "restart", "replica": 0}]}))
    proc = run(strict, fill={"FILE.json": str(refused)})
    assert proc.returncode == 2 and "refused" in proc.stdout


def test_shrink_writes_a_smaller_schedule_failing_the_same_way(tmp_path):
    small = tmp_path / "small.json"
    proc = run(
        example("isrcheck shrink FILE.json -o SMALL.json [--protocol P] [--time-budget 10] [--keep-budget default]"),
        fill={"FILE.json": SCENARIO, "SMALL.json": str(small), "--protocol P": "--protocol hw-truncation"},
    )
    assert proc.returncode == 1, proc.stderr  # the failure is still there, smaller
    assert f"written to {small}" in proc.stdout
    replay = json.loads(run(f"isrcheck check {small} --json").stdout)
    assert (replay["verdict"], replay["property"]) == ("violation", "NoLostAckedWrite")
    assert len(json.loads(small.read_text())["steps"]) <= len(json.loads((ROOT / SCENARIO).read_text())["steps"])


def test_sim_prints_what_clients_saw_and_exits_0_when_logs_agree():
    command = example(
        "isrcheck sim --protocol kip-320 --replicas 3 --seed 1 --steps 400 [--crash-kinds clean,process] [--json]"
    )
    proc = run(command, options=False)
    assert proc.returncode == 0, proc.stderr
    assert "lost acked acks=all writes 0" in proc.stdout and "logs agree yes" in proc.stdout
    assert run(command.replace(" [--json]", "")).returncode == 0  # with --crash-kinds
    proc = run(command)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["logs_agree"] is True and doc["lost_acked"] == 0
    assert {
        "produced",
        "acked",
        "committed",
        "divergent_reads",
        "leader_changes",
        "isr_changes",
        "crashes",
        "trace_hash",
    } <= set(doc)
    assert run(command).stdout == proc.stdout  # identical in any process


def test_two_power_losses_of_two_replicas_lose_an_acknowledged_write():
    """docs/model.md, fault budgets: min.insync.replicas power losses lose an acknowledged write,
    outside its budget: reported as such (exit 0), and as a violation with the budget aside."""
    proc = run(
        example(
            'isrcheck explore --protocol kip-320 --replicas 2 --max-records 1 --max-power-losses 2 --crash-kinds ""'
        )
    )
    assert proc.returncode == 0, proc.stderr
    assert "2,622 distinct states" in proc.stdout and ", complete" in proc.stdout
    assert (
        "NoLostAckedWrite broken only outside its fault budget (shortest after 14 steps: brokers 0, 1 lost data"
    ) in proc.stdout
    assert " violated after" not in proc.stdout and "no property violated within its fault budget" in proc.stdout
    proc = run(
        example(
            "isrcheck explore --protocol kip-320 --replicas 2 --max-records 1 --max-power-losses 2 "
            '--crash-kinds "" --no-budget --stop-at-first'
        )
    )
    assert proc.returncode == 1 and "violated after" in proc.stdout
    proc = run(
        example("isrcheck explore --protocol kip-320 --replicas 2 --min-isr 1 --unclean-election --max-records 1")
    )
    assert proc.returncode == 0 and "(shortest after 9 steps: unclean leader election is enabled)" in proc.stdout


@pytest.mark.slow
def test_every_fault_class_on_the_correct_protocol(tmp_path):
    """README, fault budgets: kip-966 under every fault class passes; the summary counts what each
    property's budget let it check (a minute of Spark: with the slow tests)."""
    proc = run(
        example("isrcheck fuzz --protocol kip-966 --faults all --schedules 200 --out campaigns/kip-966-all"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdicts: pass 200;" in proc.stdout and "no failure" in proc.stdout
    summary = json.loads((tmp_path / "campaigns" / "kip-966-all" / "summary.json").read_text())
    within = summary["budgets"]["NoLostAckedWrite"]["checked_within"]
    assert 100 < within < 200  # most schedules stay within it; some lose data on two brokers
    assert all(b["checked_within"] + b["outside"] == 200 for b in summary["budgets"].values())


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, violated",
    [
        (
            'isrcheck fuzz --protocol kip-101 --schedules 2000 --master "local[2]" --out campaigns/kip-101',
            {"LogMatching", "StrongIsr"},
        ),
        (
            'isrcheck fuzz --guided --protocol kip-279 --schedules 8250 --rounds 33 --steps 60 --master "local[2]" '
            "--out campaigns/kip-279",
            {"LogMatching"},
        ),
    ],
)
def test_the_spark_engines_find_the_divergence_of_kip_101_and_kip_279(command, violated, tmp_path):
    """README, swarm testing: each campaign finds its variant's log divergence, shrunk and saved."""
    proc = run(example(command), cwd=tmp_path, timeout=1800)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = tmp_path / "campaigns" / command.split("--out campaigns/")[1]
    summary = json.loads((out / "summary.json").read_text())
    assert violated <= set(summary["violated"]) and summary["swarm"]["enabled"]
    assert any(f["property"] in ("LogMatching", "WeakIsr") for f in summary["failures"])
    assert "properties violated" in proc.stdout and "LogMatching" in proc.stdout


def test_bare_commands_quoted_inline_are_sub_commands_and_those_that_need_arguments_say_so():
    assert {c for c in _examples() if len(c.split()) == 2 and c.startswith("isrcheck ")} == BARE
    listed = re.search(r"\{([a-z,-]+)\}", run("isrcheck --help").stdout).group(1).split(",")
    assert {c.split()[1] for c in BARE} <= set(listed)
    proc = run("isrcheck check 2>/dev/null; echo $?; isrcheck fuzz 2>/dev/null; echo $?")
    assert proc.stdout.split() == ["2", "2"]  # a schedule, --protocol and --schedules are required


def test_report_a_scenario_as_a_timeline(tmp_path):
    out = tmp_path / "kip101-scenario2.html"
    proc = run(
        example(
            "isrcheck report specs/scenarios/kip101-scenario2.json --protocol hw-truncation "
            "--html kip101-scenario2.html"
        ),
        fill={"kip101-scenario2.html": str(out)},
    )
    assert proc.returncode == 0, proc.stderr  # the verdict the file expects on hw-truncation
    assert f"violation of StrongIsr at step 34; timeline: {out}" in proc.stdout
    page = out.read_text()
    assert page.count('class="lane replica"') == 2 and "first bad step" in page
    assert '<p class="explanation" id="explanation">Broker 1, elected leader' in page  # what went wrong, on top


def test_the_scenarios_as_pytest_items():
    proc = run(example("python -m pytest --isrcheck specs/scenarios") + " -p no:cacheprovider -q")
    assert proc.returncode == 0, proc.stdout[-3000:]
    expectations = sum(
        len(json.loads(p.read_text()).get("expected", {})) for p in (ROOT / "specs" / "scenarios").glob("*.json")
    )
    assert f"{expectations} passed" in proc.stdout


def test_a_corpus_folder_as_pytest_items(tmp_path):
    """docs/ci.md's corpus folder: one item per expected protocol; a wrong expectation fails its item."""
    corpus = tmp_path / "tests" / "corpus"
    corpus.mkdir(parents=True)
    scenario = json.loads((ROOT / SCENARIO).read_text())
    (corpus / "scenario.json").write_text(json.dumps(scenario))
    (corpus / "wrong.json").write_text(json.dumps({**scenario, "expected": {"hw-truncation": {"verdict": "pass"}}}))
    proc = run(example("python -m pytest --isrcheck tests/corpus") + " -p no:cacheprovider -q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert f"1 failed, {len(scenario['expected'])} passed" in proc.stdout
    assert "wrong.json::hw-truncation" in proc.stdout


def test_the_driver_protocol_examples_with_this_projects_server(tmp_path):
    """docs/sut-protocol.md: a child process on stdin/stdout, and a server you started (here on any free port)."""
    proc = run(
        example('isrcheck check SCHEDULE.json --sut "java -jar my-broker-sut.jar"'),
        fill={"SCHEDULE.json": SCENARIO, "java -jar my-broker-sut.jar": "python -m isrcheck.impl.sut"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[kip-320]: pass" in proc.stdout
    # KIP-101 scenario 1 (an acknowledged write truncated away by the follower that becomes leader,
    # within every budget) with two steps too many
    scenario = json.loads(Path(SCENARIO).read_text())
    steps = scenario["steps"]
    failing = tmp_path / "failing.json"
    failing.write_text(
        json.dumps(
            {
                "version": 1,
                "protocol": "hw-truncation",
                "config": scenario["config"],
                "steps": steps[:1] + [{"step": "tick"}] + steps[1:3] + [{"step": "tick"}] + steps[3:],
            }
        )
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "isrcheck.impl.sut", "--listen", "127.0.0.1:0"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = server.stdout.readline().split(":")[-1].strip()  # "listening 127.0.0.1:PORT"
        proc = run(
            example("isrcheck shrink FAILING.json -o small.json --sut tcp://127.0.0.1:9400"),
            cwd=tmp_path,
            fill={"FAILING.json": str(failing), ":9400": f":{port}"},
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr  # the failure is still there, smaller
        assert "violation of NoLostAckedWrite at step 15: 16 -> 14 steps, written to small.json" in proc.stdout
        # the two ticks are gone (and a crash may have become a gentler kind)
        assert [st["step"] for st in json.loads((tmp_path / "small.json").read_text())["steps"]] == [
            st["step"] for st in steps
        ]
    finally:
        server.terminate()
        server.wait(timeout=60)


def _serve(command: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    """``isrcheck serve`` started as the page writes it (without its ``&``), once it says it serves."""
    proc = subprocess.Popen(
        ["bash", "-c", "exec " + command.removesuffix("&").strip()],
        cwd=cwd,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as at a terminal, even when the suite itself runs in the background (SIGINT ignored there)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Stop with Ctrl-C"):
            return proc, "".join(lines)
    proc.wait()
    raise AssertionError("serve did not start:\n" + "".join(lines))


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0, out
    return out


def test_serve_answers_kcat_and_kafka_python_and_recovers_on_the_same_dir(tmp_path):
    """README's kcat lines and docs/kafka.md's kafka-python block against the served cluster; Ctrl-C
    stops it cleanly; the same --dir again serves what was written."""
    proc, banner = _serve(example("isrcheck serve --replicas 3 --dir kafka-data --topic orders:3 &"), tmp_path)
    try:
        assert "bootstrap servers: 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094" in banner
        assert "orders (3 partitions)" in banner
        python_block = re.search(r"```python\n(.*?)```", (ROOT / "docs/kafka.md").read_text(), re.S).group(1)
        ran = subprocess.run([sys.executable, "-c", python_block], env=ENV, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0 and ran.stdout.strip() == "[b'hello']", ran.stdout + ran.stderr
        if shutil.which("kcat") is None:
            pytest.skip("kcat is not installed (Debian's kcat): its README lines were not run")
        listing = run(example("kcat -L -b 127.0.0.1:9092"), timeout=60)
        assert listing.returncode == 0 and "3 brokers:" in listing.stdout, listing.stdout + listing.stderr
        assert re.search(r'topic "orders" with 3 partitions:', listing.stdout)
        assert re.search(r"partition 0, leader 0, replicas: 0,1,2, isrs: 0,1,2", listing.stdout), listing.stdout
        wrote = run(example("printf 'a\\nb\\nc\\n' | kcat -P -b 127.0.0.1:9092 -t orders -p 0"), timeout=60)
        assert wrote.returncode == 0, wrote.stderr
        read = run(example("kcat -C -b 127.0.0.1:9092 -t orders -p 0 -o beginning -e"), timeout=60)
        assert read.stdout.split() == ["hello", "a", "b", "c"], read.stdout + read.stderr
    finally:
        stopped = _stop(proc)
    assert "stopped cleanly" in stopped
    proc, banner = _serve(example("isrcheck serve --replicas 3 --dir kafka-data --topic orders:3"), tmp_path)
    try:
        again = run("kcat -C -b 127.0.0.1:9092 -t orders -p 0 -o beginning -e", timeout=60)
        assert again.stdout.split() == ["hello", "a", "b", "c"], again.stdout + again.stderr
    finally:
        _stop(proc)


def test_apache_kafka_starts_serves_kcat_stops_cleanly_and_starts_again_from_its_dir(tmp_path):
    """README's `isrcheck kafka`: a real Apache Kafka cluster that kcat lists, writes and reads; SIGTERM
    stops every node cleanly; the same --dir starts the same cluster, with what was written."""
    command = example(KAFKA_EXAMPLE)
    proc, banner = _serve(command, tmp_path)
    try:
        assert "bootstrap servers: 127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094" in banner, banner
        assert "Apache Kafka 4.4.0, 3 brokers and a controller, ELR on" in banner and "orders (3 partitions)" in banner
        listing = run("kcat -L -b 127.0.0.1:19092 -t orders", timeout=60)
        assert "3 brokers:" in listing.stdout and 'topic "orders" with 3 partitions:' in listing.stdout, listing.stdout
        wrote = run("printf 'a\\nb\\nc\\n' | kcat -P -b 127.0.0.1:19092 -t orders -p 0 -X acks=all", timeout=60)
        assert wrote.returncode == 0, wrote.stderr
    finally:
        stopped = _stop(proc)
    assert "stopped cleanly" in stopped, stopped
    proc, banner = _serve(command, tmp_path)
    try:
        assert "formatting" not in banner  # the same cluster, not a new one
        again = run("kcat -C -b 127.0.0.1:19092 -t orders -p 0 -o beginning -e", timeout=60)
        assert again.stdout.split() == ["a", "b", "c"], again.stdout + again.stderr
    finally:
        assert "stopped cleanly" in _stop(proc)


def test_apache_kafka_fetch_and_help():
    fetched = run(example("isrcheck kafka --fetch --kafka-version 4.0.2"), timeout=600)
    assert fetched.returncode == 0 and "Apache Kafka 4.0.2's jars are in" in fetched.stdout, fetched.stderr
    shown = run(example("isrcheck kafka --help"))
    assert shown.returncode == 0 and "min.insync.replicas" in shown.stdout and "--min-insync-replicas" in shown.stdout


def test_an_experiment_on_isrchecks_cluster(tmp_path):
    """docs/apache-kafka.md: NOT_ENOUGH_REPLICAS predicted and seen on isrcheck's cluster, agree."""
    proc = run(example(EXPERIMENT), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("not-enough-replicas"))
    assert row.split()[-4:] == ["not-enough-replicas", "1/1", "1/1", "agree"], row
    assert (tmp_path / "experiments-isrcheck" / "results.json").is_file()


# -- slow: the default scope, Spark, a standalone cluster, a fresh install --------------------------


@pytest.mark.slow
def test_the_last_replica_standing_experiment_on_apache_kafka_4_0(tmp_path):
    """docs/apache-kafka.md: KIP-966's motivating case loses the acknowledged records on Kafka 4.0.2
    without ELR, as kip-903 predicts, in every repetition that reached the state."""
    proc = run(example(EXPERIMENT_KAFKA), cwd=tmp_path, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "experiments-kafka" / "results.json").read_text())
    (result,) = doc["experiments"]
    assert result["verdict"] == "agree" and result["reached"] >= 1, result


@pytest.mark.slow
def test_the_apache_kafka_soak_example(tmp_path):
    """README's soak of Apache Kafka under every fault kind: Kafka 4.4.0 (ELR on) shows no anomaly
    within its fault budget."""
    proc = run(example(KAFKA_SOAK), cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "soak of Apache Kafka 4.4.0 (ELR on, 3 brokers)" in proc.stdout and "anomalies: none" in proc.stdout
    result = json.loads((tmp_path / "soak-kafka" / "results.json").read_text())
    assert {f["kind"] for f in result["faults"]} >= {"kill", "stop", "pause", "power", "disk", "partition"}


@pytest.mark.slow
def test_invariant_examples(tmp_path):
    # the default run has the same at one broker (tests/model/smt/test_invariant.py)
    proc = run(
        example(
            "isrcheck prove --invariant --protocol kip-320 --replicas 2 --min-isr 1 --max-records 1 "
            "--max-epoch 3 --max-crashes 1 --save kip-320-two.json"
        ),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for target in ("StrongIsr", "LogMatching", "LeaderCompleteness", "NoLostAckedWrite"):
        assert f"{target}: implied by the inductive invariant" in proc.stdout
    proc = run(example("isrcheck prove --check-invariant kip-320-two.json"), cwd=tmp_path)
    assert proc.returncode == 0 and ", inductive (" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_repository_gate_and_a_campaign_page(tmp_path):
    """The gate as docs/ci.md runs it, from a copy of pyproject.toml and the corpus it names
    (tests/conformance/engines/gate/test_self_gate.py runs the same gate in the default run), then a campaign's page."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "tests" / "corpus", tmp_path / "tests" / "corpus")
    proc = run(example("isrcheck gate --junit-xml gate.xml --html gate-report"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert (tmp_path / "gate.xml").exists() and (tmp_path / "gate-report" / "index.html").exists()
    fuzz = run(
        "isrcheck fuzz --protocol kip-320 --schedules 20 --steps 30 --master local[1] --out campaigns/kip-320",
        cwd=tmp_path,
    )
    assert fuzz.returncode == 0, fuzz.stderr[-3000:]
    proc = run(example("isrcheck report campaigns/kip-320 --html campaigns/kip-320/report"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "coverage-chart" in (tmp_path / "campaigns" / "kip-320" / "report" / "index.html").read_text()


@pytest.mark.slow
def test_explore_saves_counterexamples_that_check_replays(tmp_path):
    proc = run(example("isrcheck explore --protocol kip-279 --save cex/"), cwd=tmp_path)
    assert proc.returncode == 1 and "StrongIsr violated after 25 steps" in proc.stdout
    assert (tmp_path / "cex" / "kip-279-StrongIsr.json").exists()
    proc = run(example("isrcheck check cex/kip-279-StrongIsr.json"), cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "[kip-279]: violation of StrongIsr at step 24" in proc.stdout
    )  # the file's expected one (WeakIsr fails there too)
    assert "expected: violation of StrongIsr -> as expected" in proc.stdout


@pytest.mark.slow
def test_explore_kip320_default_scope():
    doc = json.loads(run(example("isrcheck explore --protocol kip-320 --json")).stdout)
    assert doc["complete"] is True and doc["violations"] == [] and doc["beyond_budget"] == []


@pytest.mark.slow
def test_explore_replays_each_counterexample_on_the_implementation():
    proc = run(example("isrcheck explore --protocol kip-101 --replay-on-impl --json"))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["violations"]
    for v in doc["violations"]:
        assert (v["impl_verdict"], v["impl_property"]) == ("violation", v["property"])


@pytest.mark.slow
def test_fuzz_campaigns_and_replaying_a_failure(tmp_path):
    proc = run(
        example("isrcheck fuzz --protocol kip-320 --schedules 2000 --out campaigns/kip-320"), cwd=tmp_path, timeout=1800
    )
    assert proc.returncode == 0, proc.stderr
    assert example("isrcheck fuzz --protocol kip-320 --schedules 2000")
    proc = run(
        example("isrcheck fuzz --protocol hw-truncation --schedules 500 --seed 1000 --steps 150 --master local[2]"),
        cwd=tmp_path,
        timeout=1800,
    )
    assert proc.returncode == 1 and "violation-WeakIsr.json" in proc.stdout
    proc = run(example("isrcheck check campaigns/hw-truncation/failures/violation-WeakIsr.json"), cwd=tmp_path)
    assert proc.returncode == 1 and "violation of WeakIsr" in proc.stdout
    assert proc.stdout.rstrip().endswith("-> as expected")


@pytest.mark.slow
def test_a_soak_of_kip966_under_every_fault_kind_finds_no_anomaly(tmp_path):
    proc = run(
        example("isrcheck soak --protocol kip-966 --duration 120 --faults all --dir runs/kip-966"),
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "anomalies: none" in proc.stdout and "final read complete" in proc.stdout
    assert (tmp_path / "runs/kip-966/index.html").exists()


@pytest.mark.slow
def test_a_campaign_through_the_driver_protocol(tmp_path):
    proc = run(
        example(
            "isrcheck fuzz --protocol hw-truncation --schedules 40 --steps 60 "
            '--sut "python -m isrcheck.impl.sut" --out campaigns/hw-truncation-sut'
        ),
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr  # hw-truncation loses data: failures found and shrunk
    summary = json.loads((tmp_path / "campaigns" / "hw-truncation-sut" / "summary.json").read_text())
    assert summary["schedules"] == 40 and "sut-failure" not in summary["by_verdict"]
    assert summary["by_verdict"].get("violation", 0) > 0
    proc = run(
        example('isrcheck fuzz --protocol kip-320 --schedules 2000 --sut "./my-sut"'),
        cwd=tmp_path,
        fill={"--schedules 2000": "--schedules 20", "./my-sut": "python -m isrcheck.impl.sut"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "campaigns" / "kip-320" / "summary.json").read_text())
    assert summary["by_verdict"] == {"pass": 20}


@pytest.mark.slow
def test_a_standalone_cluster_runs_the_campaign_both_ways(tmp_path):
    """The master, a worker, ``fuzz --master`` and ``spark-submit`` as written, with 40 schedules
    each and a temporary directory for ``/shared`` and the worker's."""
    shared = str(tmp_path / "shared")
    started = []
    try:
        for line in (
            example("spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077 &"),
            example(
                "spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:7077 "
                "--cores 2 --work-dir /tmp/spark-work &"
            ),
        ):
            command = "exec " + line.rstrip("& ").replace("/tmp/spark-work", str(tmp_path / "work"))
            started.append(
                subprocess.Popen(
                    ["bash", "-c", command],
                    cwd=tmp_path,
                    env=ENV,
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            time.sleep(15)
        fuzz = example(
            "isrcheck fuzz --protocol kip-320 --schedules 200000 --master spark://127.0.0.1:7077 "
            "--out /shared/campaigns/kip-320"
        )
        submit = next(c for c in _examples() if c.startswith("spark-submit"))
        for command, out in (
            (fuzz, "kip-320"),
            (submit.replace("/campaigns/kip-320", "/campaigns/submitted"), "submitted"),
        ):
            proc = run(command.replace("200000", "40").replace("/shared", shared), cwd=tmp_path, timeout=900)
            assert proc.returncode == 0, proc.stderr[-3000:]
            summary = json.loads((tmp_path / "shared" / "campaigns" / out / "summary.json").read_text())
            assert summary["by_verdict"] == {"pass": 40}
    finally:
        for p in started:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=60)


@pytest.mark.slow
def test_a_fresh_install_then_the_campaign_and_the_suite(tmp_path):
    """The set-up blocks in a copy of the tree: a new venv, ``pip install`` (from the package index),
    then the campaign with 100 schedules and the suite's collection (the suite itself is this run)."""
    tree = tmp_path / "isrcheck"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "campaigns", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"
        ),
    )
    install = example(
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && isrcheck fuzz "
        "--protocol kip-320 --schedules 2000 --out campaigns/kip-320"
    )
    dev = example('python3 -m venv .venv && . .venv/bin/activate && pip install ".[dev]" && python -m pytest -n auto')
    for command, smaller in ((install, "--schedules 100"), (dev, "--collect-only -q")):
        command = command.replace("--schedules 2000", smaller) if "fuzz" in command else command + " " + smaller
        proc = subprocess.run(["bash", "-c", command], cwd=tree, capture_output=True, text=True, timeout=3600)
        assert proc.returncode == 0, proc.stderr[-3000:]
