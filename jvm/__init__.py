"""Apache Kafka's side of the harness, as files for Maven and the JVM (a folder named so that it
shadows no Python package: kafka-python is ``kafka``): ``pom.xml`` resolves a Kafka
release's jars (and the SLF4J binding its published POM lacks) into a cache outside the repository,
``log4j2.properties`` configures each node's logs. No Python runs from here."""
