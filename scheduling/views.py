from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from django.views.defaults import bad_request

from scheduling.conf import scheduling_settings
from scheduling.locks import redis_client_for_locks


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _check_cache() -> str:
    if redis_client_for_locks() is None:
        return "not used (embedded mode)"
    cache.get("healthz")
    return "ok"


def _check_broker() -> str:
    with current_app.connection_for_write() as conn:
        timeout = scheduling_settings().publish_timeout
        conn.ensure_connection(max_retries=1, timeout=timeout)  # type: ignore[arg-type]
    return "ok"


CHECKS = {"database": _check_database, "redis": _check_cache, "broker": _check_broker}


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = {}
    failed = False
    for name, check in CHECKS.items():
        try:
            report[name] = check()
        except Exception as exc:  # any failure of a dependency is what this endpoint reports
            report[name] = f"down: {type(exc).__name__}"
            failed = True
    return JsonResponse(report, status=503 if failed else 200)


def bad_request_naming_the_body(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: a body over Django's upload limit is refused before any view parses it;
    the API answers JSON that says which limit, as its other refusals do."""
    if request.path.startswith("/api/") and isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        detail = (
            f"body: the request body is larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)."
        )
        return JsonResponse({"detail": detail}, status=400)
    return bad_request(request, exception)
