import hmac
import re
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound, JsonResponse
from django.views.decorators.http import require_GET
from django.views.defaults import bad_request
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework.authentication import SessionAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from scheduling.delivery import metrics
from scheduling.ops import busy, health
from scheduling.rows import registry
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import database_of, redis_client_for_locks
from scheduling.rows.replicas.middleware import reads_primary


def _check_database() -> str:
    """The default database and each one a scheduled model is routed to."""
    aliases = {DEFAULT_DB_ALIAS, *(database_of(model) for model in registry.scheduled_models())}
    for alias in sorted(aliases):
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT 1")
        except DatabaseError as exc:
            # A pool with none free also times out when the server is down: ask the server.
            if busy.busy_reason(exc) == busy.POOL_EXHAUSTED:
                busy.connect_past_the_pool(connections[alias])
            raise
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


@reads_primary  # "is the primary up", and lateness as the sweep sees it
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = {}
    failed = False
    for name, check in CHECKS.items():
        try:
            report[name] = check()
        except Exception as exc:  # any failure of a dependency is what this endpoint reports
            report[name] = _failure(exc)
            failed = True
    if report["database"] == "ok" and (delivery := _delivery()):
        # Present only when late, so a healthy answer keeps its shape.
        report["delivery"] = delivery
        failed = True
    if unswept := health.unswept_text():
        # Present only then, and no 503 by itself: the web is fine (docs/operations.md).
        report["sweep"] = unswept
    if report["database"] == "ok" and (paused := _paused()):
        report["paused"] = paused  # an operator's choice, not a failure: no 503
    return JsonResponse(report, status=503 if failed else 200)


def _failure(exc: Exception) -> str:
    """For a database that is up with no connection to spare, "busy: <why>"; else "down: ..."."""
    reason = busy.busy_reason(exc)
    return f"busy: {reason}" if reason else f"down: {type(exc).__name__}"


def _delivery() -> str:
    """Empty when every model delivers in time, else what is wrong."""
    try:
        late = _late_models()
    except Exception as exc:  # e.g. a scheduled table not migrated yet
        return f"unknown: {type(exc).__name__}"
    return "late: " + ", ".join(late) if late else ""


def _paused() -> str:
    try:
        return health.paused_text()
    except DatabaseError as exc:  # e.g. the pause table not migrated yet
        return f"unknown: {type(exc).__name__}"


def _late_models() -> list[str]:
    """Models whose oldest due pending row has waited past SCHEDULING_HEALTH_MAX_LATENESS.

    Nothing due is healthy, even with no sweeper running: that is the silent-sweeper alert's
    business (docs/operations.md), not a reason to take the web out of a load balancer.
    """
    limit = health.max_lateness()
    return [
        f"{model._meta.label_lower} {seconds:.0f} s > {limit:g} s"
        for model, seconds in health.late_models()
    ]


class PrometheusText(BaseRenderer):
    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"


class AnyAccept(BaseContentNegotiation):
    """Prometheus asks for OpenMetrics first; the text format is what it always accepts."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        return (renderers[0], renderers[0].media_type)

    def select_parser(self, request: Any, parsers: Any) -> Any:
        return None


class MetricsView(APIView):
    """GET /metrics: `Authorization: Bearer <SCHEDULING_METRICS_TOKEN>`, or a staff session.

    No credentials: 401; a wrong token, another scheme, or a signed-in non-staff user: 403.
    A DRF view (outside the API schema) so that any authentication the host's tests force on
    DRF requests reaches it too; it carries its own classes, whatever REST_FRAMEWORK says.
    """

    authentication_classes = [SessionAuthentication]
    permission_classes: list[Any] = []
    throttle_classes: list[Any] = []
    renderer_classes = [PrometheusText]
    content_negotiation_class = AnyAccept
    schema = None

    def get(self, request: Request) -> HttpResponse:
        refused = metrics_refusal(request)
        if refused:
            response = HttpResponse(status=refused)
            if refused == 401:
                response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        text = metrics.exposition()
        if not request.META.get("HTTP_AUTHORIZATION"):  # the token sees every model
            text = figures_for(request.user, text)
        return HttpResponse(text, content_type=CONTENT_TYPE_LATEST)


MODEL_LABEL = re.compile(rb'model="([^".]+)\.([^"]+)"')


def figures_for(user: Any, text: bytes) -> bytes:
    """The exposition less the samples of models the staff user may not view: a model's
    figures follow the model's view permission, as its rows do."""
    if user.is_superuser:
        return text
    lines = text.splitlines(keepends=True)
    return b"".join(line for line in lines if _may_view(user, MODEL_LABEL.search(line)))


def _may_view(user: Any, label: re.Match[bytes] | None) -> bool:
    if label is None:
        return True
    app_label, model_name = (part.decode() for part in label.groups())
    return bool(user.has_perm(f"{app_label}.view_{model_name}"))


def metrics_refusal(request: Request) -> int | None:
    """None when allowed, else the status to answer."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        token = scheduling_settings().metrics_token
        scheme, _, given = header.partition(" ")
        if not token or scheme.lower() != "bearer":
            return 403
        # compare_digest: the time taken says nothing about how much of the token matched.
        return None if hmac.compare_digest(given.strip().encode(), token.encode()) else 403
    if not request.user or not request.user.is_authenticated:
        return 401
    return None if request.user.is_staff else 403


metrics_view = reads_primary(MetricsView.as_view())  # gauges as the sweep sees them


# A body over one of Django's upload limits: the limit's setting, and what it bounds.
BODY_LIMITS: dict[type[Exception], tuple[str, str]] = {
    RequestDataTooBig: ("DATA_UPLOAD_MAX_MEMORY_SIZE", "the request body is larger than {} bytes"),
    TooManyFieldsSent: ("DATA_UPLOAD_MAX_NUMBER_FIELDS", "the request has more than {} fields"),
    TooManyFilesSent: ("DATA_UPLOAD_MAX_NUMBER_FILES", "the request has more than {} files"),
}


def body_refusal(request: HttpRequest, exception: Exception) -> JsonResponse | None:
    """The API's JSON answer to a body over an upload limit, which says which limit; None for
    another exception or a page outside the API."""
    limit = BODY_LIMITS.get(type(exception))
    if limit is None or not request.path.startswith("/api/"):
        return None
    setting, words = limit
    detail = f"body: {words.format(getattr(settings, setting))} ({setting})."
    return JsonResponse({"detail": detail}, status=400)


def bad_request_naming_the_body(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: a body over Django's upload limits is refused before any view parses it;
    the API answers JSON that says which limit, as its other refusals do."""
    return body_refusal(request, exception) or bad_request(request, exception)


class InputRefusals:
    """Middleware for two refusals before any view: a path segment of digits not all ASCII
    ("\uff11", a fullwidth one) names no row (404, as an unknown id: int() reads it as 1, so a
    row would have many URLs, and the admin's object pages take any text as the id); and under
    DEBUG too, the API's bodies over an upload limit answer JSON, where Django answers a
    SuspiciousOperation with its HTML debug page instead of calling handler400."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        segments = request.path.split("/")
        if any(segment.isdigit() and not segment.isascii() for segment in segments):
            return HttpResponseNotFound("No row has this id: ids are ASCII digits.")
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return body_refusal(request, exception)
