import django_filters  # type: ignore[import-untyped]
from django.db.models import QuerySet
from rest_framework.exceptions import PermissionDenied

from purchases.models import ScheduledPurchase
from scheduling.api import ScheduledEventFilterSet


class ScheduledPurchaseFilterSet(ScheduledEventFilterSet):
    purchase = django_filters.NumberFilter(field_name="purchase")
    release = django_filters.NumberFilter(field_name="purchase__release")
    track = django_filters.NumberFilter(field_name="track")
    artist = django_filters.NumberFilter(field_name="purchase__release__artist")
    account = django_filters.NumberFilter(field_name="purchase__release__artist__account")
    customer = django_filters.NumberFilter(field_name="purchase__customer")
    customer_email = django_filters.CharFilter(
        field_name="purchase__customer__email",
        method="filter_customer_email",
        help_text="The customer's email, any case; needs the permission to view customers "
        "(else 403: a match would tell that an email bought something).",
    )

    class Meta:
        model = ScheduledPurchase
        fields: list[str] = []

    def filter_customer_email(
        self, queryset: QuerySet[ScheduledPurchase], name: str, value: str
    ) -> QuerySet[ScheduledPurchase]:
        user = getattr(self.request, "user", None)
        if user is None or not user.has_perm("purchases.view_customer"):
            raise PermissionDenied(
                "customer_email needs the permission to view customers (purchases.view_customer)."
            )
        return queryset.filter(purchase__customer__email__iexact=value)
