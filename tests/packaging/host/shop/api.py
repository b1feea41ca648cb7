from scheduling.api.filters import ScheduledEventFilterSet
from scheduling.api.serializers import ScheduledEventSerializer
from scheduling.api.views import ScheduledEventViewSet

from .models import ScheduledOrderEmail


class ScheduledOrderEmailSerializer(ScheduledEventSerializer):
    class Meta(ScheduledEventSerializer.Meta):
        model = ScheduledOrderEmail
        fields = (*ScheduledEventSerializer.Meta.fields, "order")
        read_only_fields = fields


class ScheduledOrderEmailFilterSet(ScheduledEventFilterSet):
    class Meta:
        model = ScheduledOrderEmail
        fields = ["order"]


class ScheduledOrderEmailViewSet(ScheduledEventViewSet):
    queryset = ScheduledOrderEmail.objects.all()
    serializer_class = ScheduledOrderEmailSerializer
    filterset_class = ScheduledOrderEmailFilterSet
