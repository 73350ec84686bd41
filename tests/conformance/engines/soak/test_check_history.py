"""``isrcheck check-history FILE``: the soak's checker on a history recorded elsewhere, isrcheck's
history.jsonl or a Jepsen Kafka test's history.edn; anomalies with their operations, exit 1 on
one, a page with --html, exit 2 for what is not a history to check."""

from __future__ import annotations

import json

import pytest

from isrcheck.conformance.cli.main import main

# A Jepsen Kafka history (non-transactional, assign): process 0 sends 1 and 2 to key 0 (offsets
# 0 and 1) and 3 to key 1; process 1 polls; then the final polls (crash, assign with
# :seek-to-beginning? true, poll) read key 0 without offset 1: value 2, acknowledged, is lost.
JEPSEN = """\
{:type :invoke, :f :send, :value [[:send 0 1]], :time 100, :process 0, :index 0}
{:type :ok, :f :send, :value [[:send 0 [0 1]]], :time 200, :process 0, :index 1}
{:type :invoke, :f :assign, :value [0 1], :time 210, :process 1, :index 2}
{:type :info, :f :start-partition, :value nil, :time 250, :process :nemesis, :index 3}
{:type :ok, :f :assign, :value [0 1], :time 300, :process 1, :index 4}
{:type :invoke, :f :send, :value [[:send 0 2] [:send 1 3]], :time 310, :process 0, :index 5}
{:type :ok, :f :send, :value [[:send 0 [1 2]] [:send 1 [0 3]]], :time 400, :process 0, :index 6}
{:type :invoke, :f :poll, :value [[:poll]], :poll-ms 100, :time 410, :process 1, :index 7}
{:type :ok, :f :poll, :value [[:poll {0 [[0 1]], 1 [[0 3]]}]], :poll-ms 100, :time 500, :process 1, :index 8}
{:type :invoke, :f :crash, :time 600, :process 1, :index 9}
{:type :info, :f :crash, :time 610, :process 1, :index 10}
{:type :invoke, :f :debug-topic-partitions, :value [0 1], :time 620, :process 4, :index 11}
{:type :ok, :f :debug-topic-partitions, :value [], :time 630, :process 4, :index 12}
{:type :invoke, :f :assign, :value [0 1], :seek-to-beginning? true, :time 700, :process 4, :index 13}
{:type :ok, :f :assign, :value [0 1], :seek-to-beginning? true, :time 710, :process 4, :index 14}
{:type :invoke, :f :poll, :value [[:poll]], :time 800, :process 4, :index 15}
{:type :ok, :f :poll, :value [[:poll {0 [[0 1] [2 7]], 1 [[0 3]]}]], :time 900, :process 4, :index 16}
"""


def _jepsen(tmp_path, text=JEPSEN, name="history.edn"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_jepsen_history_with_a_lost_write_exits_1_naming_its_operations(tmp_path, capsys):
    assert main(["check-history", str(_jepsen(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "anomalies: lost-write (1)" in out, out
    lost = next(line for line in out.splitlines() if line.startswith("  lost-write:"))
    assert "value 2" in lost and "(Jepsen :index 6)" in lost, lost


def test_a_clean_jepsen_history_passes_as_a_vector_too(tmp_path, capsys):
    clean = JEPSEN.replace("{0 [[0 1] [2 7]], 1 [[0 3]]}", "{0 [[0 1] [1 2]], 1 [[0 3]]}")
    assert main(["check-history", str(_jepsen(tmp_path, clean))]) == 0
    assert "no anomaly" in capsys.readouterr().out
    vector = _jepsen(tmp_path, "[" + clean + "]", name="history-vector.txt")
    assert main(["check-history", str(vector), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] and result["stats"]["final-polls"] == 1 and not result["notes"]


def test_isrchecks_own_history_and_a_page(tmp_path, capsys):
    events = [
        {"index": 0, "time": 10, "process": 0, "type": "invoke", "f": "send", "partition": 0, "value": 1},
        {"index": 1, "time": 20, "process": 0, "type": "ok", "f": "send", "partition": 0, "value": 1, "offset": 0},
        {"index": 2, "time": 30, "process": 9, "type": "invoke", "f": "poll", "partitions": [0], "final": True},
        {"index": 3, "time": 40, "process": 9, "type": "ok", "f": "poll", "records": {"0": [[0, 1], [0, 2]]}},
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    page = tmp_path / "page.html"
    assert main(["check-history", str(path), "--html", str(page)]) == 1
    out = capsys.readouterr().out
    assert "inconsistent-offsets" in out and f"page: {page}" in out
    html = page.read_text()
    assert "isrcheck check-history: " in html and "inconsistent-offsets" in html


@pytest.mark.parametrize(
    "text, said",
    [
        ("", "no operation: nothing to check"),
        (
            "{:type :invoke, :f :txn, :value [[:send 0 1] [:poll]], :time 1, :process 0, :index 0}\n",
            "line 1: a transaction (:f :txn): isrcheck's checker does not check transactions",
        ),
        (
            "{:type :ok, :f :send, :value [[:send 0 [0 1]]], :time 1, :process 0, :index 0}\n",
            "line 1: a completion of process 0 without its invoke",
        ),
        ("{:type :invoke, :f :send, :value [[:send 0 1]], :time 1, :process 0\n", "line 1: not an EDN map"),
        (
            "{:type :invoke, :f :send, :value [[:send 0 1]], :time -1, :process 0, :index 0}\n",
            '"time" must be an int >= 0',
        ),
    ],
)
def test_what_is_no_history_to_check_exits_2_in_one_line(tmp_path, capsys, text, said):
    assert main(["check-history", str(_jepsen(tmp_path, text)), "--format", "jepsen"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err


def test_an_endless_history_is_refused_at_the_line_bound(capsys):
    assert main(["check-history", "/dev/zero"]) == 2
    assert "/dev/zero:1: a line longer than a history may hold (16 MiB)" in capsys.readouterr().err
