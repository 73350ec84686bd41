"""kcat (Debian's ``kcat``, on its own librdkafka) against the cluster: the metadata it lists, the
records it consumes and produces, the compression it uses."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is not on PATH (Debian/Ubuntu: apt-get install kcat)"
)


def kcat(*args: str, stdin: bytes | None = None) -> bytes:
    """Run kcat; its stdout, after checking it succeeded without a delivery failure."""
    done = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=30)
    assert done.returncode == 0 and b"failed" not in done.stderr, (done.returncode, done.stderr.decode()[-2000:])
    return done.stdout


def test_kcat_lists_brokers_and_partitions(shared_cluster, topic_name):
    """``kcat -L -b host:port``: the three brokers at their Kafka ports, and the topic's three
    partitions, each led by its first (preferred) replica, replicated on every broker, every
    replica in sync; the leaders are those the cluster's Metadata names."""
    topic = shared_cluster.create_topic(topic_name)
    out = kcat("-L", "-b", shared_cluster.address(2), "-t", topic).decode()
    brokers = {int(b): address for b, address in re.findall(r"broker (\d+) at (\S+)", out)}
    assert brokers == {b: shared_cluster.address(b) for b in range(3)}, out
    assert f'topic "{topic}" with 3 partitions' in out, out
    listed = {
        int(p): (int(leader), replicas.split(","), sorted(isrs.split(",")))
        for p, leader, replicas, isrs in re.findall(
            r"partition (\d+), leader (-?\d+), replicas: (\S*), isrs: (\S*)", out
        )
    }
    leaders = {p: state.leader for p, state in shared_cluster.partitions(topic).items()}
    assert sorted(listed) == [0, 1, 2], out
    for p, (leader, replicas, isrs) in listed.items():
        assert leader == leaders[p] == int(replicas[0]), out
        assert sorted(replicas) == isrs == ["0", "1", "2"], out


def parse_kcat_records(out: bytes) -> list[tuple[int, bytes | None, bytes | None, tuple]]:
    """Records printed with ``-f '%o %K %S\\n%k%s|%h\\n'`` (lengths first: binary-safe, -1 for null)."""
    records, pos = [], 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        offset, key_len, value_len = map(int, out[pos:end].split())
        pos = end + 1
        key = None if key_len < 0 else out[pos : pos + key_len]
        pos += max(key_len, 0)
        value = None if value_len < 0 else out[pos : pos + value_len]
        pos += max(value_len, 0)
        assert out[pos : pos + 1] == b"|"
        end = out.index(b"\n", pos)
        headers = tuple(
            (name, v.encode()) for name, _, v in (h.partition("=") for h in out[pos + 1 : end].decode().split(",") if h)
        )
        records.append((offset, key, value, headers))
        pos = end + 1
    return records


def test_kcat_consumes_what_a_client_produced(shared_cluster, kit, topic_name):
    """``kcat -C -t topic -p 0 -o beginning -e``: the records a client produced, at their offsets,
    keys and values byte-exact (null and empty kept apart), with their headers, then kcat exits at
    the end of the partition."""
    topic = shared_cluster.create_topic(topic_name)
    recs = [
        kit.Rec(None, b"null key\x00\n"),
        kit.Rec(b"", b""),
        kit.Rec(b"tombstone", None),
        kit.Rec(bytes(range(256)), b"\xff\n" * 500, (("a", b"1"), ("b", b""), ("a", b"2"))),
    ]
    recs += [kit.Rec(b"k%d" % i, b"v%d" % i, (("i", b"%d" % i),)) for i in range(20)]
    delivery = kit.clients["confluent-kafka"].produce(shared_cluster.bootstrap, topic, [(0, r) for r in recs])
    assert not delivery.failed
    out = kcat(
        "-C",
        "-b",
        shared_cluster.address(0),
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%o %K %S\n%k%s|%h\n",
    )
    assert parse_kcat_records(out) == [(s.offset, s.rec.key, s.rec.value, s.rec.headers) for s in delivery.acked]


def test_kcat_produces_what_clients_consume(shared_cluster, kit, topic_name):
    """``kcat -P -K '\\t' -H name=value -p 1``: each input line a record with its key, value and
    header, read back by both clients in input order."""
    topic = shared_cluster.create_topic(topic_name)
    lines = [(b"key-%d" % i, b"value %d" % i) for i in range(25)]
    kcat(
        "-P",
        "-b",
        shared_cluster.address(1),
        "-t",
        topic,
        "-p",
        "1",
        "-K",
        "\t",
        "-H",
        "via=kcat",
        stdin=b"".join(k + b"\t" + v + b"\n" for k, v in lines),
    )
    want = [kit.Rec(k, v, (("via", b"kcat"),)) for k, v in lines]
    for client in kit.clients.values():
        got = kit.read_all(client, shared_cluster.bootstrap, topic, {1: len(want)})
        assert [(s.offset, s.rec) for s in got[1]] == list(enumerate(want)), client.name


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kcat_compresses_what_it_produces(shared_cluster, kit, topic_name, codec):
    """``kcat -P -z CODEC``: the records are stored in batches compressed with the codec asked for
    (librdkafka leaves a batch too small to gain by it uncompressed, so not necessarily all)."""
    topic = shared_cluster.create_topic(topic_name)
    kcat(
        "-P",
        "-b",
        shared_cluster.address(0),
        "-t",
        topic,
        "-p",
        "0",
        "-z",
        codec,
        "-X",
        "linger.ms=100",
        stdin=b"".join(b"compress me %d\n" % i for i in range(50)),
    )
    with shared_cluster.connect(shared_cluster.leader(topic, 0)) as conn:
        assert codec in kit.batch_codecs(conn.fetch(topic, 0))
