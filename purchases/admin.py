"""Admin for the store. Dates that drive emails are saved through the services, inside the
admin's transaction, so the scheduled rows move with them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Case, Count, DurationField, F, QuerySet, When
from django.db.models.functions import Coalesce, Now
from django.forms import BaseInlineFormSet, ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase, Track
from purchases.services import purchase_refund, release_move, track_move
from scheduling.admin import (
    STORABLE_DATETIMES,
    AuditedAdmin,
    ScheduledEventAdmin,
    ScheduledEventInline,
    short_duration,
)

# One rule for a customer's email and name wherever a page shows or searches them: the
# permission to view customers (tests/security/test_permission_matrix.py, DATA_RULES).
VIEW_CUSTOMER = "purchases.view_customer"


class CustomerDataNeedsViewCustomer:
    """A mixin for the admins of models that reach a customer: without VIEW_CUSTOMER, the
    customer's column and fields are left out, and the search does not look in them (a search
    that finds a row would tell that an email bought something)."""

    customer_fields: tuple[str, ...] = ("customer",)

    def get_list_display(self, request: HttpRequest) -> Any:
        return self._without_customer(request, super().get_list_display(request))  # type: ignore[misc]

    def get_search_fields(self, request: HttpRequest) -> Any:
        return self._without_customer(request, super().get_search_fields(request))  # type: ignore[misc]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._without_customer(request, super().get_fields(request, obj))  # type: ignore[misc]

    def _without_customer(self, request: HttpRequest, names: Any) -> Any:
        if request.user.has_perm(VIEW_CUSTOMER):
            return names
        return [name for name in names if not _names_customer(name, self.customer_fields)]


def _names_customer(name: Any, fields: tuple[str, ...]) -> bool:
    return isinstance(name, str) and any(name == field or f"{field}__" in name for field in fields)


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    search_fields = ("name",)


@admin.register(Artist)
class ArtistAdmin(admin.ModelAdmin):
    list_display = ("name", "account")
    list_filter = ("account",)
    search_fields = ("name", "account__name")


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ("email", "name")
    search_fields = ("email", "name")


class TrackInline(admin.TabularInline):
    model = Track
    extra = 0
    fields = ("position", "title", "release_date")
    formfield_overrides = STORABLE_DATETIMES


@admin.register(Release)
class ReleaseAdmin(AuditedAdmin):  # a new release date moves its emails
    list_display = ("title", "artist", "release_date")
    list_filter = ("artist__account", "artist")
    list_select_related = ("artist",)
    search_fields = ("title", "artist__name")
    date_hierarchy = "release_date"
    inlines = (TrackInline,)
    readonly_fields = ("scheduled_rows",)
    formfield_overrides = STORABLE_DATETIMES

    @admin.display(description="Scheduled emails")
    def scheduled_rows(self, obj: Release) -> str:
        # Not an inline (rows hang off purchases, and a release may have thousands of buyers):
        # the counts, the first rows, and a link to all of them.
        if obj.pk is None:
            return "-"
        rows = ScheduledPurchase.objects.filter(purchase__release=obj)
        url = reverse("admin:purchases_scheduledpurchase_changelist")
        return format_html(
            '<p>{} <a href="{}?purchase__release__id__exact={}">View them all</a></p>{}',
            status_counts(rows) or "none",
            url,
            obj.pk,
            first_rows_table(rows),
        )

    def save_model(self, request: HttpRequest, obj: Release, form: ModelForm, change: bool) -> None:
        if change and "release_date" in form.changed_data:
            moved = release_move(release=obj, release_date=obj.release_date)
            messages.info(request, f"Moved {moved} scheduled emails with the release date.")
        super().save_model(request, obj, form, change)

    def save_formset(
        self, request: HttpRequest, form: ModelForm, formset: BaseInlineFormSet, change: bool
    ) -> None:
        super().save_formset(request, form, formset, change)
        if formset.model is not Track:
            return
        for track_form in formset.forms:
            track = track_form.instance
            if track.pk and "release_date" in track_form.changed_data:
                track_move(track=track, release_date=track.release_date)


RELEASE_PAGE_ROWS = 50


def status_counts(rows: QuerySet[ScheduledPurchase]) -> str:
    counts = rows.values_list("status").annotate(n=Count("pk")).order_by("status")
    return format_html_join(", ", "{} {}", ((n, status) for status, n in counts))


def first_rows_table(rows: QuerySet[ScheduledPurchase]) -> str:
    """The soonest pending rows first, then the rest; at most RELEASE_PAGE_ROWS of them."""
    pending_first = Case(When(status=ScheduledPurchase.Status.PENDING, then=0), default=1)
    first = rows.select_related("purchase__customer", "track").order_by(
        pending_first, "due_at", "pk"
    )[:RELEASE_PAGE_ROWS]
    if not first:
        return ""
    body = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (
                row.event_id,
                f"#{row.purchase_id}",  # not the customer: a release's page is no customer's
                row.track.title if row.track else "whole release",
                row.status,
                row.due_at.isoformat(),
            )
            for row in first
        ),
    )
    return format_html(
        '<table class="scheduled-rows"><thead><tr><th>Event</th><th>Purchase</th><th>Track</th>'
        "<th>Status</th><th>Due at</th></tr></thead><tbody>{}</tbody></table>",
        body,
    )


class ScheduledPurchaseInline(ScheduledEventInline):
    model = ScheduledPurchase
    fields = ("track", *ScheduledEventInline.fields)
    readonly_fields = fields


@admin.register(Purchase)
class PurchaseAdmin(CustomerDataNeedsViewCustomer, AuditedAdmin):  # a refund cancels its emails
    list_display = ("pk", "customer", "release", "status", "created_at")
    list_filter = ("status", "release__artist__account", "release__artist")
    list_select_related = ("customer", "release")
    search_fields = ("customer__email", "release__title")
    readonly_fields = ("customer", "release", "status", "created_at")
    inlines = (ScheduledPurchaseInline,)
    actions = ("refund",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sales come from the store (the API), which schedules them

    @admin.action(description="Refund selected purchases", permissions=["change"])
    def refund(self, request: HttpRequest, queryset: QuerySet[Purchase]) -> None:
        paid = list(queryset.filter(status=Purchase.Status.PAID))
        cancelled = sum(purchase_refund(purchase=purchase) for purchase in paid)
        messages.success(
            request, f"Refunded {len(paid)} purchases; cancelled {cancelled} scheduled emails."
        )


def lateness_expression() -> Case:
    """How late a row was published, or how overdue a pending row is, against the time the
    business asked for (retries move due_at), by the database's clock; NULL for rows not due
    yet, cancelled or expired unpublished."""
    business_time = Coalesce(F("business_due_at"), F("due_at"))
    return Case(
        When(delivered_at__isnull=False, then=F("delivered_at") - business_time),
        When(status=ScheduledPurchase.Status.PENDING, due_at__lt=Now(), then=Now() - business_time),
        default=None,
        output_field=DurationField(),
    )


class ReleaseWithArtistFilter(admin.RelatedFieldListFilter):
    """The release filter's choices in one query: a release's name shows its artist, which
    Django's filter would fetch with a query per release, on every page of the list."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> Any:
        ordering = self.field_admin_ordering(field, request, model_admin) or ()
        releases = Release.objects.select_related("artist").order_by(*ordering)
        return [(release.pk, str(release)) for release in releases]


@admin.register(ScheduledPurchase)
class ScheduledPurchaseAdmin(CustomerDataNeedsViewCustomer, ScheduledEventAdmin):
    # What the business asks about a row, narrow enough for a 1280 px screen with the filters.
    list_display = (
        *("row", "customer", "release", "track_title", "due_at", "state", "lateness"),
        *("attempts", "error"),
    )
    list_filter = (
        *ScheduledEventAdmin.list_filter,
        "purchase__release__artist",
        "purchase__release__artist__account",
        ("purchase__release", ReleaseWithArtistFilter),
    )
    list_select_related = ("purchase__customer", "purchase__release__artist", "track")
    # The changelist searches ScheduledPurchase.search_fields (the start of a customer's email or
    # name); the release filter stands for a search by title.

    def get_queryset(self, request: HttpRequest) -> QuerySet[ScheduledPurchase]:
        return super().get_queryset(request).annotate(lateness_value=lateness_expression())

    @admin.display(description="Customer", ordering="purchase__customer__email")
    def customer(self, obj: ScheduledPurchase) -> Any:
        return obj.purchase.customer

    @admin.display(description="Release", ordering="purchase__release__title")
    def release(self, obj: ScheduledPurchase) -> Any:
        release = obj.purchase.release
        return f"{release.title} ({release.artist})"

    @admin.display(description="Track", ordering="track__position")
    def track_title(self, obj: ScheduledPurchase) -> str:
        return obj.track.title if obj.track else "whole release"

    @admin.display(description="Lateness", ordering="lateness_value")
    def lateness(self, obj: ScheduledPurchase) -> str:
        value = getattr(obj, "lateness_value", None)
        if value is None:
            return "-"
        return short_duration(value) if obj.delivered_at else f"{short_duration(value)} overdue"
