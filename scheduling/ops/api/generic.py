"""A list and the bulk actions for every scheduled model, with no API code of the host's.

`scheduling.ops.api.urls` mounts one read-only list per model at `events/<app_label>/<model_name>/`
with the bulk actions of ScheduledEventViewSet, filterable by lifecycle, status, due time, the
model's entities (each foreign key, by primary key) and its plain fields (exact match on each
text, integer, boolean or choices field; every plain field is in the JSON, read-only). A domain that wants its own resource
(richer filters, joins on its entities) subclasses ScheduledEventViewSet instead, as the demo's
purchases and trainings do.
"""

from __future__ import annotations

from typing import Any

import django_filters  # type: ignore[import-untyped]
from django import forms
from django.db import connection, models

from scheduling.ops.api.filters import ScheduledEventFilterSet
from scheduling.ops.api.serializers import ScheduledEventSerializer
from scheduling.ops.api.views import ScheduledEventViewSet
from scheduling.rows.host_fields import entity_fields, filterable_fields, plain_fields
from scheduling.rows.models import ScheduledEvent


def viewset_for(model: type[ScheduledEvent]) -> type[ScheduledEventViewSet]:
    entities = entity_fields(model)
    attributes: dict[str, Any] = {
        "queryset": model._default_manager.select_related(*(f.name for f in entities)),
        "serializer_class": serializer_for(model, entities),
        "filterset_class": filterset_for(model, entities),
    }
    return type(f"{component_name(model)}ViewSet", (ScheduledEventViewSet,), attributes)


def component_name(model: type[ScheduledEvent]) -> str:
    # Unique across apps, and unlike a host's own "<Model>Serializer" in the OpenAPI schema.
    app = "".join(part.title() for part in model._meta.app_label.split("_"))
    return f"{app}{model.__name__}Event"


def serializer_for(
    model: type[ScheduledEvent], entities: list[models.ForeignKey[Any, Any]]
) -> type[ScheduledEventSerializer]:
    own = (*(f.name for f in entities), *(f.name for f in plain_fields(model)))
    fields = (*ScheduledEventSerializer.Meta.fields, *own)
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
    filters |= {f.name: plain_filter(f) for f in filterable_fields(model)}
    filters["Meta"] = type("Meta", (), {"model": model, "fields": []})
    return type(f"{component_name(model)}FilterSet", (ScheduledEventFilterSet,), filters)


def entity_filter(field: models.ForeignKey[Any, Any]) -> django_filters.Filter:
    target = field.target_field
    numeric = isinstance(target, models.IntegerField | models.AutoField)
    kind = django_filters.NumberFilter if numeric else django_filters.CharFilter
    return kind(field_name=field.name, help_text=f"The {field.name}'s primary key.")


class IntegerFilter(django_filters.Filter):
    field_class = forms.IntegerField


def plain_filter(field: models.Field[Any, Any]) -> django_filters.Filter:
    """Exact match; a value the column cannot hold is a 400 naming the field, not a query."""
    about = f"Rows whose {field.name} is this."
    if field.choices:
        choices = list(field.flatchoices)
        return django_filters.ChoiceFilter(field_name=field.name, choices=choices, help_text=about)
    if isinstance(field, models.BooleanField):
        return django_filters.BooleanFilter(field_name=field.name, help_text=about)
    if isinstance(field, models.IntegerField):
        low, high = connection.ops.integer_field_range(field.get_internal_type())
        return IntegerFilter(field_name=field.name, min_value=low, max_value=high, help_text=about)
    return django_filters.CharFilter(field_name=field.name, help_text=about)
