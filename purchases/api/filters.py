import django_filters  # type: ignore[import-untyped]

from purchases.models import ScheduledPurchase
from scheduling.api.filters import ScheduledEventFilterSet


class ScheduledPurchaseFilterSet(ScheduledEventFilterSet):
    purchase = django_filters.NumberFilter(field_name="purchase")
    release = django_filters.NumberFilter(field_name="purchase__release")
    track = django_filters.NumberFilter(field_name="track")
    artist = django_filters.NumberFilter(field_name="purchase__release__artist")
    account = django_filters.NumberFilter(field_name="purchase__release__artist__account")
    customer = django_filters.NumberFilter(field_name="purchase__customer")
    customer_email = django_filters.CharFilter(
        field_name="purchase__customer__email", lookup_expr="iexact"
    )

    class Meta:
        model = ScheduledPurchase
        fields: list[str] = []
