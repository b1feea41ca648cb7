from celery import current_app
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from scheduling.conf import scheduling_settings


def _check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_cache() -> None:
    cache.get("healthz")


def _check_broker() -> None:
    with current_app.connection_for_write() as conn:
        timeout = scheduling_settings().publish_timeout
        conn.ensure_connection(max_retries=1, timeout=timeout)  # type: ignore[arg-type]


CHECKS = {"database": _check_database, "redis": _check_cache, "broker": _check_broker}


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = {}
    for name, check in CHECKS.items():
        try:
            check()
            report[name] = "ok"
        except Exception as exc:  # any failure of a dependency is what this endpoint reports
            report[name] = f"down: {type(exc).__name__}"
    healthy = all(value == "ok" for value in report.values())
    return JsonResponse(report, status=200 if healthy else 503)
