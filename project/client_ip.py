"""Who a request's client is, for throttles and sign-in lockouts alike, and what django-axes
records of a failed sign-in."""

from __future__ import annotations

from ipaddress import ip_address
from typing import Any

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


def attempted_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """The username a sign-in tried, as django-axes records it: cut to its column's 255
    characters. The admin's login form does not bound it, and a longer one failed to save."""
    data = credentials or getattr(request, "data", request.POST)
    username = data.get("username")
    return username[:255] if isinstance(username, str) else None
