"""Campaign figures computed by Spark over the runs/ dataset; only aggregates reach the driver.

The rows stay in Parquet; the driver collects counts, a ten-point coverage-growth curve and one
row per distinct failure (bounded by ``max_failures``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

# The harness's coverage items: "s:<shape>" abstract states, "<step>><step>" action pairs,
# "d:<rung>" divergence rungs (core.lockstep.divergence_rungs) and "<output>:<error>" outcomes.
STATE_PREFIX = "s:"
RUNG_PREFIX = "d:"
COVERAGE_KINDS = ("abstract_states", "action_pairs", "divergence_rungs", "outputs")


@dataclass
class Aggregates:
    schedules: int = 0
    by_verdict: dict[str, int] = field(default_factory=dict)
    by_property: dict[str, int] = field(default_factory=dict)
    distinct_coverage: int = 0
    coverage_by_kind: dict[str, int] = field(default_factory=dict)
    coverage_growth: list[dict] = field(default_factory=list)
    schedules_with_step: dict[str, int] = field(default_factory=dict)  # step kind -> schedules taking it
    distinct_failures: list[dict] = field(default_factory=list)
    config_hashes: list[str] = field(default_factory=list)
    duplicate_seeds: int = 0
    mean_duration_ms: float = 0.0
    # per property: schedules that left its fault budget, and those that broke it outside the budget
    outside_budget: dict[str, int] = field(default_factory=dict)
    beyond_budget: dict[str, int] = field(default_factory=dict)
    # property -> schedules that violated it (as the verdict's property or at the same step)
    violated: dict[str, int] = field(default_factory=dict)
    # swarm feature -> (schedules whose swarm kept it, failing ones among them)
    swarm_features: dict[str, tuple[int, int]] = field(default_factory=dict)


def spark_ddl(schema) -> str:
    """ROW_SCHEMA as a Spark DDL string: reading with a known schema skips schema inference."""
    # pyarrow: only on the driver, when a schema is asked for
    import pyarrow as pa

    def sql_type(t) -> str:
        if pa.types.is_list(t):
            return f"ARRAY<{sql_type(t.value_type)}>"
        return {pa.int64(): "BIGINT", pa.int32(): "INT", pa.float64(): "DOUBLE", pa.string(): "STRING"}[t]

    return ", ".join(f"`{f.name}` {sql_type(f.type)}" for f in schema)


def aggregate(
    spark, partition_dir: str, lo: int, hi: int, growth_points: int = 10, max_failures: int = 1000
) -> Aggregates:
    """Figures over seeds [lo, hi) in one protocol's Parquet partition directory."""
    # pyspark and pyarrow: only when a campaign aggregates
    from pyspark.sql import functions as F

    from isrcheck.conformance.engines.campaign.executor import ROW_SCHEMA

    df = (
        spark.read.schema(spark_ddl(ROW_SCHEMA))
        .parquet(partition_dir)
        .where((F.col("seed") >= lo) & (F.col("seed") < hi))
    )
    agg = Aggregates()
    # Four small jobs: totals, verdict counts, coverage growth, distinct failures.
    totals = df.agg(
        F.count("*").alias("n"),
        F.countDistinct("seed").alias("seeds"),
        F.avg("duration_ms").alias("ms"),
        F.array_sort(F.collect_set("config_hash")).alias("configs"),
    ).first()
    agg.schedules = int(totals["n"])
    if agg.schedules == 0:
        return agg
    agg.duplicate_seeds = agg.schedules - int(totals["seeds"])
    agg.mean_duration_ms = float(totals["ms"] or 0.0)
    agg.config_hashes = list(totals["configs"])
    for r in df.groupBy("verdict", "property").count().collect():
        agg.by_verdict[r["verdict"]] = agg.by_verdict.get(r["verdict"], 0) + int(r["count"])
        if r["verdict"] != "pass":
            agg.by_property[f"{r['verdict']}:{r['property']}"] = int(r["count"])
    agg.by_verdict = dict(sorted(agg.by_verdict.items()))
    agg.by_property = dict(sorted(agg.by_property.items()))
    violations = (
        df.where(F.col("verdict") == "violation")
        .select(F.explode(F.concat(F.array("property"), "also")).alias("p"))
        .groupBy("p")
        .count()
        .collect()
    )
    agg.violated = {r["p"]: int(r["count"]) for r in sorted(violations, key=lambda r: r["p"])}
    for column in ("outside_budget", "beyond_budget"):
        counts = df.select(F.explode(column).alias("p")).groupBy("p").count().collect()
        setattr(agg, column, {r["p"]: int(r["count"]) for r in sorted(counts, key=lambda r: r["p"])})

    # Coverage growth: each coverage item counts from the first seed (in seed order) reaching it.
    width = max(1, -(-(hi - lo) // growth_points))
    item = F.col("item")
    first_seen = (
        df.select("seed", F.explode("coverage").alias("item"))
        .groupBy("item")
        .agg(F.min("seed").alias("first"))
        .withColumn(
            "kind",
            F.when(item.startswith(STATE_PREFIX), "abstract_states")
            .when(item.contains(">"), "action_pairs")
            .when(item.startswith(RUNG_PREFIX), "divergence_rungs")
            .otherwise("outputs"),
        )
    )
    new_items: dict[tuple[int, str], int] = {
        (int(r["bucket"]), r["kind"]): int(r["count"])
        for r in first_seen.groupBy(F.floor((F.col("first") - lo) / width).alias("bucket"), "kind").count().collect()
    }
    running = dict.fromkeys(COVERAGE_KINDS, 0)
    for b in range(-(-(hi - lo) // width)):
        for kind in COVERAGE_KINDS:
            running[kind] += new_items.get((b, kind), 0)
        agg.coverage_growth.append(
            {"schedules": min(hi - lo, (b + 1) * width), "distinct": sum(running.values()), **running}
        )
    agg.coverage_by_kind = dict(running)
    agg.distinct_coverage = sum(running.values())

    # Step kinds: an action pair "<previous>><step>" says a schedule took <step> (not refused).
    taken = (
        df.select("seed", F.explode("coverage").alias("item"))
        .where(item.contains(">"))
        .select("seed", F.split(item, ">").getItem(1).alias("step"))
        .distinct()
    )
    agg.schedules_with_step = {
        r["step"]: int(r["count"]) for r in taken.groupBy("step").count().orderBy("step").collect()
    }

    features = (
        df.select(F.explode("swarm_features").alias("feature"), (F.col("verdict") != "pass").alias("bad"))
        .groupBy("feature")
        .agg(F.count("*").alias("n"), F.sum(F.col("bad").cast("int")).alias("failing"))
        .orderBy("feature")
        .collect()
    )
    agg.swarm_features = {r["feature"]: (int(r["n"]), int(r["failing"] or 0)) for r in features}

    # One representative per distinct failure: the shortest shrunk schedule (then the smallest
    # seed), with how many seeds hit that failure.
    failures = df.where(F.col("failure_id").isNotNull())
    best = failures.groupBy("failure_id").agg(
        F.min(F.struct(F.coalesce("shrunk_steps", F.lit(0)).alias("n"), "seed")).alias("best"),
        F.count("*").alias("seeds"),
    )
    reps = (
        failures.join(best.select("failure_id", F.col("best.seed").alias("seed"), "seeds"), ["failure_id", "seed"])
        .orderBy("failure_id")
        .limit(max_failures)
        .select(
            "failure_id",
            "seed",
            "seeds",
            "verdict",
            "property",
            "first_bad_step",
            "steps",
            "shrunk_steps",
            "trace_hash",
            "failure",
        )
        .collect()
    )
    for r in reps:
        entry = r.asDict()
        entry["failure"] = json.loads(entry["failure"])
        agg.distinct_failures.append(entry)
    return agg


def budget_counts(schedules: int, outside: dict, beyond: dict) -> dict:
    """Per property whose fault budget some schedule left: in how many schedules it was checked
    within its budget to the end, and in how many it broke outside it (no violation)."""
    return {
        p: {
            "checked_within": schedules - outside.get(p, 0),
            "outside": outside.get(p, 0),
            "broken_outside": beyond.get(p, 0),
        }
        for p in sorted(set(outside) | set(beyond))
    }


def swarm_summary(enabled: bool, features: dict) -> dict:
    """Whether the campaign's walks were swarm walks, and per swarm feature how many schedules
    kept it and how many of those failed (a feature kept by few failing schedules suppresses
    the failure, in Groce et al.'s terms; one kept by all of them triggers it)."""
    return {"enabled": enabled, "features": {f: {"schedules": n, "failing": bad} for f, (n, bad) in features.items()}}
