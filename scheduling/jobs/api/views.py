"""Keyed jobs over HTTP: PUT, GET, PATCH and DELETE /api/jobs/{key}/, POST /api/jobs/ with the
key in the body (MyCoach's request, verbatim), a filtered list, and bulk cancel and reschedule
over the same filters. The writes are the services in scheduling/jobs/services.py; this package
parses, checks shapes and answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from scheduling.jobs.api.filters import NOT_FILTERS, parse_bulk_filter, parse_job_filter
from scheduling.jobs.api.schema import documented
from scheduling.jobs.api.serializers import (
    LIST_SCHEDULES,
    MAX_LIST_LIMIT,
    RUN_HISTORY,
    JobBulkCancelSerializer,
    JobBulkRescheduleSerializer,
    JobListSerializer,
    JobPatchSerializer,
    JobPostSerializer,
    JobPutSerializer,
    JobSerializer,
)
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import (
    KEY_PATTERN,
    RESERVED_KEYS,
    JobError,
    check_key,
    job_cancel_many,
    job_delete,
    job_patch,
    job_put,
    job_reschedule_many,
)
from scheduling.ops.api.defaults import FrameworkViewDefaults
from scheduling.ops.api.pagination import BoundedLimitOffsetPagination
from scheduling.ops.api.parsers import JSONParser
from scheduling.ops.api.throttles import JobListThrottle, JobWriteThrottle
from scheduling.ops.api.views import BulkActions, ModelViewPermission, validated
from scheduling.rows.states import Status

T = TypeVar("T")


class JobListPagination(BoundedLimitOffsetPagination):
    default_limit = MAX_LIST_LIMIT
    max_limit = MAX_LIST_LIMIT


class JobPermission(ModelViewPermission):
    """A PUT or a POST may create or replace a job: it needs both the add and the change
    permission (the bulk actions, POST too, set their own)."""

    perms_map = {
        **ModelViewPermission.perms_map,
        "PUT": ["%(app_label)s.add_%(model_name)s", "%(app_label)s.change_%(model_name)s"],
        "POST": ["%(app_label)s.add_%(model_name)s", "%(app_label)s.change_%(model_name)s"],
    }


@documented
class JobViewSet(BulkActions, FrameworkViewDefaults, viewsets.GenericViewSet):
    queryset = Job.objects.all()
    serializer_class = JobSerializer
    permission_classes = [JobPermission]
    throttle_classes = [JobWriteThrottle, JobListThrottle]
    pagination_class = JobListPagination
    parser_classes = [JSONParser]
    filter_backends: list[Any] = []
    lookup_field = "key"
    # Odd keys reach the view, which names the accepted form; a NUL cannot be in any key.
    lookup_value_regex = "[^/\x00]+"
    bulk_reschedule_serializer = JobBulkRescheduleSerializer
    bulk_cancel_serializer = JobBulkCancelSerializer

    def get_queryset(self) -> QuerySet[Job]:
        return with_runs(Job.objects.all())

    def list(self, request: Request) -> Response:
        params = {k: v for k, v in request.query_params.lists() if k not in NOT_FILTERS}
        jobs = with_next_runs(parse_job_filter(params).jobs())
        page = with_run_counts(self.paginate_queryset(jobs) or [])
        return self.get_paginated_response(
            JobListSerializer(page, many=True, context=self.get_serializer_context()).data
        )

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(self.get_serializer(self.get_object()).data)

    def get_object(self) -> Job:
        existing_key(self.kwargs["key"])
        return super().get_object()

    def create(self, request: Request) -> Response:
        body = validated(JobPostSerializer, request)
        job, created = service_call(job_put, owner_id=request.user.pk, **body)
        # Keys are URL-safe (KEY_PATTERN): the job's own URL is this one plus the key.
        headers = {"Location": request.build_absolute_uri(f"{request.path}{job.key}/")}
        return Response(self.job_data(job.key), status=201 if created else 200, headers=headers)

    def update(self, request: Request, key: str) -> Response:
        body = validated(JobPutSerializer, request)
        job, created = service_call(job_put, key=checked_key(key), owner_id=request.user.pk, **body)
        return Response(self.job_data(job.key), status=201 if created else 200)

    def partial_update(self, request: Request, key: str) -> Response:
        body = validated(JobPatchSerializer, request)
        job = service_call(job_patch, key=existing_key(key), **body)
        return Response(self.job_data(job.key))

    def destroy(self, request: Request, key: str) -> Response:
        service_call(job_delete, key=existing_key(key))
        return Response(self.job_data(key))

    def job_data(self, key: str) -> Any:
        return self.get_serializer(with_runs(Job.objects.filter(key=key)).get()).data

    def bulk_reschedule(self, body: dict[str, Any]) -> int:
        return service_call(
            job_reschedule_many,
            selection=parse_bulk_filter(body["filter"]),
            due_at=body.get("due_at"),
            shift=body.get("shift"),
        )

    def bulk_cancel(self, body: dict[str, Any]) -> int:
        return job_cancel_many(selection=parse_bulk_filter(body["filter"]), reason=body["reason"])

    def http_method_not_allowed(  # type: ignore[override]  # DRF narrows Django's request
        self, request: Request, *args: Any, **kwargs: Any
    ) -> Response:
        """PUT /api/jobs/cancel/ meant a job keyed "cancel": say why there can be none."""
        route = request.resolver_match.url_name if request.resolver_match else ""
        reserved = (route or "").removeprefix("job-")
        if request.method == "PUT" and reserved in RESERVED_KEYS:
            checked_key(reserved)
        return super().http_method_not_allowed(request, *args, **kwargs)


def service_call(service: Callable[..., T], **kwargs: Any) -> T:
    try:
        return service(**kwargs)
    except JobError as exc:
        raise serializers.ValidationError({exc.field: [exc.message]}) from None
    except Job.DoesNotExist:
        raise Http404("No job has this key.") from None


def with_runs(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """Prefetches each job's pending runs and its RUN_HISTORY latest other runs."""
    pending = ScheduledJobRun.objects.filter(status=Status.PENDING).order_by("due_at", "pk")
    others = ScheduledJobRun.objects.exclude(status=Status.PENDING).order_by("-due_at", "-pk")
    return jobs.prefetch_related(
        Prefetch("runs", queryset=pending, to_attr="pending_runs"),
        Prefetch("runs", queryset=others[:RUN_HISTORY], to_attr="recent_runs"),
    ).order_by("key")


def with_next_runs(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """Prefetches each job's LIST_SCHEDULES next pending runs (one query for the page)."""
    pending = ScheduledJobRun.objects.filter(status=Status.PENDING).order_by("due_at", "pk")
    return jobs.prefetch_related(
        Prefetch("runs", queryset=pending[:LIST_SCHEDULES], to_attr="next_runs")
    ).order_by("key")


def with_run_counts(jobs: list[Job]) -> list[Job]:
    """Sets each job's `run_counts` ({status: runs}), one grouped query for the page."""
    counts: dict[int, dict[str, int]] = {job.pk: {} for job in jobs}
    grouped = ScheduledJobRun.objects.filter(job__in=list(counts)).values("job", "status")
    for row in grouped.annotate(runs=Count("pk")).order_by():
        counts[row["job"]][row["status"]] = row["runs"]
    for job in jobs:
        job.run_counts = counts[job.pk]  # type: ignore[attr-defined]
    return jobs


def existing_key(key: str) -> str:
    """A key no job can have (a NUL, say, which PostgreSQL refuses to compare) is a 404."""
    if not KEY_PATTERN.fullmatch(key):
        raise Http404("No job has this key.")
    return key


def checked_key(key: str) -> str:
    try:
        return check_key(key)
    except JobError as exc:
        raise serializers.ValidationError({"key": [exc.message]}) from None
