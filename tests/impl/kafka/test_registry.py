"""The Kafka API registry: one entry per API beside its handler; ApiVersions, the server's decoding
and the dispatch read the same entries."""

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from isrcheck.impl.kafka import APIS, KafkaApis
from isrcheck.impl.kafka.admin import AdminApis
from isrcheck.impl.kafka.registry import bind, serves
from isrcheck.impl.kafka.unsupported import CoordinatorApis


def test_every_api_has_a_handler_on_its_owner_and_classes_of_its_name():
    owners = {"KafkaApis": KafkaApis, "CoordinatorApis": CoordinatorApis, "AdminApis": AdminApis}
    for key, api in APIS.items():
        assert callable(getattr(owners[api.owner], api.handler)), api
        assert api.request.API_KEY == key and api.response.API_KEY == key, api
        assert api.request.__name__ == api.name + "Request"
        assert api.advertised_lowest <= api.lowest <= api.highest <= len(api.request) - 1, api


def test_api_versions_advertises_exactly_the_registry():
    answered = KafkaApis.api_versions_response(3)
    assert {k.api_key: (k.min_version, k.max_version) for k in answered.api_keys} == {
        key: (api.advertised_lowest, api.highest) for key, api in APIS.items()
    }


def test_a_key_registered_twice_or_an_owner_not_given_is_refused(monkeypatch):
    monkeypatch.setattr("isrcheck.impl.kafka.registry.APIS", dict(APIS))
    with pytest.raises(ValueError, match="api key 18 registered twice: KafkaApis.handle_api_versions"):
        serves(18, ApiVersionsRequest, ApiVersionsResponse, (0, 3))(lambda self, req, version, respond: None)
    with pytest.raises(ValueError, match="no object given for the handlers of AdminApis, CoordinatorApis"):
        bind(object.__new__(KafkaApis))
