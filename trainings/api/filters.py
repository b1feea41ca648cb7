import django_filters  # type: ignore[import-untyped]

from scheduling.api import AwareDateTimeFilter, ScheduledEventFilterSet
from trainings.kinds import NotificationKind
from trainings.models import ScheduledTrainingNotification, Training


class ScheduledTrainingNotificationFilterSet(ScheduledEventFilterSet):
    kind = django_filters.MultipleChoiceFilter(
        choices=NotificationKind.choices,
        help_text="One or more of: " + ", ".join(NotificationKind.values),
    )
    team = django_filters.NumberFilter(field_name="training__team")
    training = django_filters.NumberFilter(field_name="training")

    class Meta:
        model = ScheduledTrainingNotification
        fields: list[str] = []


class TrainingFilterSet(django_filters.FilterSet):
    team = django_filters.NumberFilter(field_name="team")
    start_after = AwareDateTimeFilter(field_name="start_at", lookup_expr="gte")
    start_before = AwareDateTimeFilter(field_name="start_at", lookup_expr="lt")
    cancelled = django_filters.BooleanFilter(
        field_name="cancelled_at", lookup_expr="isnull", exclude=True
    )

    class Meta:
        model = Training
        fields: list[str] = []
