"""The deterministic simulation runtime: a simulated clock with timers and a simulated network;
the simulated file system comes from the storage engine. ``isrcheck sim`` lives in ``cli``."""
