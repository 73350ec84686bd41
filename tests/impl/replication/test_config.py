"""ClusterConfig: a value out of range is refused with the field's name."""

import pytest

from isrcheck.impl.replication import ClusterConfig, InvalidConfigError


def test_bad_config_names_the_field():
    with pytest.raises(InvalidConfigError, match="protocol"):
        ClusterConfig(protocol="kip-9999")
    with pytest.raises(InvalidConfigError, match="min_insync_replicas"):
        ClusterConfig(replicas=2, min_insync_replicas=3)
