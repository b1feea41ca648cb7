"""Admin pages that record the signed-in user as the actor of the scheduled rows they change.

Every view that can change rows runs inside `scheduling.actor("admin:<username>")`: the
changelist (its actions, and their intermediate forms, run inside it), the change form and the
delete page. A domain admin whose saves or actions move or cancel scheduled rows through a
service subclasses AuditedAdmin too.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from scheduling.rows.actors import actor, user_actor


def as_signed_in_user(request: HttpRequest) -> AbstractContextManager[str]:
    return actor(user_actor("admin", request.user))


class AuditedAdmin(admin.ModelAdmin):
    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> Any:
        with as_signed_in_user(request):
            return super().changelist_view(request, extra_context)

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> Any:
        with as_signed_in_user(request):
            return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> Any:
        with as_signed_in_user(request):
            return super().delete_view(request, object_id, extra_context)
