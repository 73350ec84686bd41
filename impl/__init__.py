"""The production implementation: storage engine, brokers, controller, clients, wire protocol, and
the runtimes it runs on (``runtime`` holds the interfaces, ``sim`` the deterministic simulation)."""
