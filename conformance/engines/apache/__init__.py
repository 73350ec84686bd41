"""Apache Kafka under test: its jars fetched once (``distribution``), a KRaft cluster of JVM processes
on this machine (``cluster``), a power-loss file system under each node's log directory
(``lazyfs``), each node in its own network namespace so chosen links can be cut (``netns``), and
the soak's faults played on those processes (``faults``)."""
