"""Who a request's client is, for throttles and sign-in lockouts alike."""

from __future__ import annotations

from ipaddress import ip_address

from django.http import HttpRequest
from rest_framework.throttling import BaseThrottle


def client_address(request: HttpRequest) -> str | None:
    """DRF's rule (REST_FRAMEWORK["NUM_PROXIES"]): the connecting address, or with N trusted
    proxies the Nth address from the right of X-Forwarded-For. django-axes calls this, so a
    lockout counts the client a throttle counts. What is not an address (a proxy that wrote
    something else) counts as the connecting one: axes stores an address."""
    chosen = BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads META only
    try:
        return str(ip_address(chosen))
    except ValueError:
        return request.META.get("REMOTE_ADDR")
