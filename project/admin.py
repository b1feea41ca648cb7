"""django-axes' admin, with its cleanup action made safe to run: lockouts are listed and lifted
(deleted) under Axes > Access attempts."""

from typing import Any

from axes.admin import AccessAttemptAdmin
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest


class SignInAttemptAdmin(AccessAttemptAdmin):
    @admin.action(description="Clean up expired attempts", permissions=["delete"])
    def cleanup_expired_attempts(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        # axes' action reads the attributes its sign-in path sets on a request: without them,
        # a server error.
        AxesProxyHandler.update_request(request)
        super().cleanup_expired_attempts(request, queryset)


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, SignInAttemptAdmin)
