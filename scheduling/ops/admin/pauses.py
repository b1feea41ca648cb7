"""Pause and resume a model's delivery from the admin: one POST view at
`<admin>/scheduling/pause/` (URL name `admin:scheduling_pause`), added with the dashboard, that
the dashboard and each scheduled model's changelist post to, with the reason. Staff with the
`scheduling.pause_delivery` permission only; the signed-in user is recorded as who paused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from scheduling.delivery.pauses.models import PERMISSION, DeliveryPause
from scheduling.delivery.pauses.services import (
    delivery_pause,
    delivery_resume,
    pausable_model,
    pauses,
)
from scheduling.ops.admin.audit import as_signed_in_user
from scheduling.ops.health import pause_text

if TYPE_CHECKING:
    AdminBase = admin.ModelAdmin
else:
    AdminBase = object

ACTIONS = ("pause", "resume")
REASON_MAX = 500


def may_pause(request: HttpRequest) -> bool:
    return bool(request.user.is_staff and request.user.has_perm(f"scheduling.{PERMISSION}"))


def pause_urls(site: admin.AdminSite) -> list[URLPattern]:
    return [path("scheduling/pause/", site.admin_view(pause_view), name="scheduling_pause")]


@require_POST
def pause_view(request: HttpRequest) -> HttpResponse:
    if not may_pause(request):
        raise PermissionDenied(f"pausing delivery takes scheduling.{PERMISSION}")
    action, reason = request.POST.get("action", ""), request.POST.get("reason", "").strip()
    if action not in ACTIONS:
        return HttpResponseBadRequest(f"action: expected one of {', '.join(ACTIONS)}")
    if len(reason) > REASON_MAX:
        return HttpResponseBadRequest(f"reason: at most {REASON_MAX} characters")
    try:
        model = pausable_model(request.POST.get("model", ""))
    except ValidationError as exc:
        return HttpResponseBadRequest("; ".join(exc.message_dict["model"]))
    with as_signed_in_user(request):
        if action == "pause":
            pause = delivery_pause(model=model, reason=reason)
            messages.warning(request, f"{model._meta.label}: delivery {pause_text(pause)}.")
        else:
            delivery_resume(model=model, reason=reason)
            messages.success(request, f"{model._meta.label}: delivery resumed.")
    return HttpResponseRedirect(back_to(request))


def back_to(request: HttpRequest) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("admin:index")


def pause_context(
    request: HttpRequest, label: str, pause: DeliveryPause | None, site_name: str
) -> dict[str, Any]:
    """What the pause box (admin/scheduling/pause_box.html) shows of one model."""
    try:
        url = reverse("admin:scheduling_pause", current_app=site_name)
    except Exception:  # a site the dashboard (and so this view) was not added to
        url = ""
    return {
        "model": label,
        "paused": pause_text(pause) if pause else "",
        "url": url if may_pause(request) else "",
        "next": request.get_full_path(),
    }


class PauseBoxAdmin(AdminBase):
    """A ModelAdmin mixin: the changelist shows a scheduled model's delivery pause above the
    list (its template extends admin/scheduling/pause_change_list.html). The model is the
    admin's own; paused_label() names another (the keyed jobs' list: their runs' model)."""

    def paused_label(self) -> str:
        return str(self.model._meta.label_lower)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> Any:
        label = self.paused_label()
        box = pause_context(request, label, pauses().get(label), self.admin_site.name)
        return super().changelist_view(request, {"pause": box, **(extra_context or {})})
