"""The jobs API's OpenAPI description: each operation's summary, parameters and answers, and
MyCoach's request as the example of POST."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from scheduling.jobs.api.filters import FILTER_HELP
from scheduling.jobs.api.serializers import (
    LIST_SCHEDULES,
    MAX_LIST_LIMIT,
    JobBulkCancelSerializer,
    JobBulkRescheduleSerializer,
    JobListSerializer,
    JobPatchSerializer,
    JobPostSerializer,
    JobPutSerializer,
    JobSerializer,
)
from scheduling.jobs.services import KEY_FORM
from scheduling.ops.api.views import BAD_REQUEST
from scheduling.rows.states import Status

# MyCoach's v2 scheduler request (the issue's shape; the instants are the article's "90 … 15 min
# before the training").
MYCOACH_EXAMPLE = OpenApiExample(
    "MyCoach scheduler request",
    value={
        "key": "training-invitations-42",
        "schedules": [
            "2026-12-24T12:30:00Z",
            "2026-12-24T12:45:00Z",
            "2026-12-24T13:00:00Z",
            "2026-12-24T13:15:00Z",
            "2026-12-24T13:30:00Z",
            "2026-12-24T13:45:00Z",
        ],
        "callback": {
            "type": "rabbitmq",
            "data": {
                "queue": "training.invitations.notifications",
                "payload": {"trainingId": 42},
            },
        },
    },
    request_only=True,
)
KEY_PARAMETER = OpenApiParameter(
    "key", str, OpenApiParameter.PATH, description=f"The job's key: {KEY_FORM}."
)
NOT_FOUND = OpenApiResponse(description="No job has this key.")

READING = {
    "list": extend_schema(
        summary="List jobs, filtered by labels, payload fields and run status",
        description=f"Each job with its next {LIST_SCHEDULES} pending instants and its runs "
        f"counted by status (`run_counts`); its own URL has the runs. At most {MAX_LIST_LIMIT} "
        "jobs a page (a larger `limit` is capped). " + FILTER_HELP,
        parameters=[
            OpenApiParameter("status", str, many=True, enum=Status.values),
            OpenApiParameter("key", str, many=True, description="Exact keys."),
            OpenApiParameter("key_prefix", str, description="Keys starting with this."),
        ],
        responses={200: JobListSerializer(many=True), 400: BAD_REQUEST},
    ),
    "retrieve": extend_schema(
        summary="A job with its runs",
        parameters=[KEY_PARAMETER],
        responses={200: JobSerializer, 404: NOT_FOUND},
    ),
}
WRITING = {
    "create": extend_schema(
        summary="Create or replace a job, the key in the body",
        description="PUT's semantics with the key in the body, so a client written for "
        "MyCoach's scheduler (`key`, `schedules`, a `rabbitmq` callback whose `data.payload` "
        "is the message body) works unchanged. 201 when the key is new, 200 when it replaced "
        "a job; sending the same body again changes nothing and publishes nothing twice.",
        request=JobPostSerializer,
        responses={200: JobSerializer, 201: JobSerializer, 400: BAD_REQUEST},
        examples=[MYCOACH_EXAMPLE],
    ),
    "update": extend_schema(
        summary="Create or replace a job by key",
        description="The pending runs become exactly `schedules`: a pending instant stays as it "
        "is, an instant already delivered is not scheduled again (one that expired, failed or "
        "was cancelled is pending again), the other pending runs are cancelled and kept as "
        "history. 201 when the key is new, 200 when it replaced a job.",
        parameters=[KEY_PARAMETER],
        request=JobPutSerializer,
        responses={200: JobSerializer, 201: JobSerializer, 400: BAD_REQUEST},
    ),
    "partial_update": extend_schema(
        summary="Change a job's callback, payload or labels",
        description="Each field given replaces the stored one; pending runs publish the new "
        "values.",
        parameters=[KEY_PARAMETER],
        request=JobPatchSerializer,
        responses={200: JobSerializer, 400: BAD_REQUEST, 404: NOT_FOUND},
    ),
    "destroy": extend_schema(
        summary="Cancel a job's pending runs",
        description="The job and its runs stay, as history; a later PUT schedules it again.",
        parameters=[KEY_PARAMETER],
        responses={200: JobSerializer, 404: NOT_FOUND},
    ),
}
# The bulk actions are BulkActions'; their answers stay, their bodies and words are the jobs'.
BULK = {
    "reschedule": extend_schema(
        request=JobBulkRescheduleSerializer,
        summary="Reschedule the pending runs of the jobs a filter selects",
        description="Send `due_at` (move them to a time) or `shift` (move them by an ISO 8601 "
        "duration, e.g. PT2H). Only pending runs move; each moved run's version goes up by one.",
    ),
    "cancel": extend_schema(
        request=JobBulkCancelSerializer,
        summary="Cancel the pending runs of the jobs a filter selects",
    ),
}

documented = extend_schema_view(**READING, **WRITING, **BULK)
