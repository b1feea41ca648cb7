"""A list and the bulk actions for every scheduled model, with no API code of the host's.

`scheduling.api.urls` mounts one read-only list per model at `events/<app_label>/<model_name>/`
with the bulk actions of ScheduledEventViewSet, filterable by lifecycle, status, due time and
the model's entities (each foreign key, by primary key). A domain that wants its own resource
(richer filters, joins on its entities) subclasses ScheduledEventViewSet instead, as the demo's
purchases and trainings do.
"""

from __future__ import annotations

from typing import Any

import django_filters  # type: ignore[import-untyped]
from django.db import models

from scheduling.api.filters import ScheduledEventFilterSet
from scheduling.api.serializers import ScheduledEventSerializer
from scheduling.api.views import ScheduledEventViewSet
from scheduling.models import ScheduledEvent


def viewset_for(model: type[ScheduledEvent]) -> type[ScheduledEventViewSet]:
    entities = entity_fields(model)
    attributes: dict[str, Any] = {
        "queryset": model._default_manager.select_related(*(f.name for f in entities)),
        "serializer_class": serializer_for(model, entities),
        "filterset_class": filterset_for(model, entities),
    }
    return type(f"{component_name(model)}ViewSet", (ScheduledEventViewSet,), attributes)


def entity_fields(model: type[ScheduledEvent]) -> list[models.ForeignKey[Any, Any]]:
    return [f for f in model._meta.concrete_fields if isinstance(f, models.ForeignKey)]


def component_name(model: type[ScheduledEvent]) -> str:
    # Unique across apps, and unlike a host's own "<Model>Serializer" in the OpenAPI schema.
    app = "".join(part.title() for part in model._meta.app_label.split("_"))
    return f"{app}{model.__name__}Event"


def serializer_for(
    model: type[ScheduledEvent], entities: list[models.ForeignKey[Any, Any]]
) -> type[ScheduledEventSerializer]:
    fields = (*ScheduledEventSerializer.Meta.fields, *(f.name for f in entities))
    meta = type(
        "Meta",
        (ScheduledEventSerializer.Meta,),
        {"model": model, "fields": fields, "read_only_fields": fields},
    )
    return type(f"{component_name(model)}Serializer", (ScheduledEventSerializer,), {"Meta": meta})


def filterset_for(
    model: type[ScheduledEvent], entities: list[models.ForeignKey[Any, Any]]
) -> type[ScheduledEventFilterSet]:
    filters: dict[str, Any] = {f.name: entity_filter(f) for f in entities}
    filters["Meta"] = type("Meta", (), {"model": model, "fields": []})
    return type(f"{component_name(model)}FilterSet", (ScheduledEventFilterSet,), filters)


def entity_filter(field: models.ForeignKey[Any, Any]) -> django_filters.Filter:
    target = field.target_field
    numeric = isinstance(target, models.IntegerField | models.AutoField)
    kind = django_filters.NumberFilter if numeric else django_filters.CharFilter
    return kind(field_name=field.name, help_text=f"The {field.name}'s primary key.")
