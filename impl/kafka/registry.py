"""The Kafka APIs a broker serves, each registered beside its handler, as franz-go's kfake does:
``@serves(key, Request, Response, (lowest, highest))`` above a handler method records the API's
key, name, classes and versions in ``APIS``; ``bind`` finds each handler on the object that owns
it. One entry per API, so that ApiVersions, the server's decoding and the dispatch cannot disagree.

Handlers take ``(request, version, respond)`` and return the response, None when they answer
later through ``respond``, or ``apis.NO_RESPONSE`` (a produce with acks=0).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple


class Api(NamedTuple):
    """One API: its key and name, its classes, the versions served, the lowest advertised, and
    its handler (a method name on the class named ``owner``)."""

    key: int
    name: str
    request: type
    response: type
    lowest: int
    highest: int
    advertised_lowest: int
    owner: str
    handler: str


APIS: dict[int, Api] = {}


def serves(
    key: int, request: type, response: type, versions: tuple[int, int], advertised_lowest: int | None = None
) -> Callable:
    """Registers the decorated method as the handler of API ``key`` for ``versions`` (inclusive);
    ApiVersions advertises from ``advertised_lowest`` (default: the lowest served)."""
    lowest, highest = versions

    def register(method: Callable) -> Callable:
        if key in APIS:
            raise ValueError(
                f"api key {key} registered twice: {APIS[key].owner}.{APIS[key].handler} and {method.__qualname__}"
            )
        owner, _, name = method.__qualname__.rpartition(".")
        APIS[key] = Api(
            key,
            request.__name__.removesuffix("Request"),
            request,
            response,
            lowest,
            highest,
            lowest if advertised_lowest is None else advertised_lowest,
            owner,
            name,
        )
        return method

    return register


def bind(*owners: Any) -> dict[int, Callable[[Any, int, Callable[[Any], None]], Any]]:
    """Each registered API's handler, bound to the one of ``owners`` whose class defines it."""
    by_class = {type(owner).__name__: owner for owner in owners}
    missing = sorted({api.owner for api in APIS.values()} - by_class.keys())
    if missing:
        raise ValueError(f"no object given for the handlers of {', '.join(missing)}")
    return {api.key: getattr(by_class[api.owner], api.handler) for api in APIS.values()}


__all__ = ["APIS", "Api", "bind", "serves"]
