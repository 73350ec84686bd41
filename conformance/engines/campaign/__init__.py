"""Fuzzing campaigns on Spark: seeded random crash schedules run by executors, one Parquet row
per schedule, failures shrunk where they are found, resumable by seed range.

Public API::

    from isrcheck.conformance.engines.campaign import CampaignParams, run_campaign
    result = run_campaign(CampaignParams("kip-320", schedules=2000), "campaigns/kip-320",
                          master="local[2]")
    result.exit_code, result.summary          # 0/1 and what summary.json holds

The CLI is ``isrcheck fuzz`` (module ``command``); under spark-submit run this package's
``__main__.py``. Heavy imports (pyspark, pyarrow) happen only when a campaign runs.
"""

from __future__ import annotations

from isrcheck.conformance.lazy import lazy_exports

_EXPORTS = {
    "CampaignParams": "driver",
    "CampaignResult": "driver",
    "CampaignError": "driver",
    "run_campaign": "driver",
    "PROTOCOLS": "driver",
    "CampaignStore": "store",
    "Harness": "harness",
    "load_harness": "harness",
    "SparkUnavailable": "session",
    "start_spark": "session",
    "ROW_SCHEMA": "executor",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
