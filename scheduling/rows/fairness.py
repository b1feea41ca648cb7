"""A model's `fairness_key`: the business entity (a label's account, a team) whose due rows the
sweep takes in turns, so that one entity's 200,000 rows do not hold another's 20 behind them.

A row's turn is its place in its key's due order (1 for each key's earliest due row); a fair
claim takes the lowest turns first (scheduling.delivery.sweep.sql.FAIR_CLAIM).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db.models import F, QuerySet, Window
from django.db.models.constants import LOOKUP_SEP
from django.db.models.functions import RowNumber

FAIRNESS_KEY_FORM = (
    "a field path through the row's foreign keys (or one-to-one fields), such as "
    "'purchase__release__artist__account' or 'training__team', whose last part is a relation "
    "or a field"
)


def in_turns(rows: QuerySet[Any], key: str) -> QuerySet[Any]:
    """`rows` with each one's `turn` in its key's due order, lowest turns first."""
    turn = Window(RowNumber(), partition_by=F(key), order_by=(F("due_at").asc(), F("pk").asc()))
    return rows.annotate(turn=turn).order_by("turn", "due_at", "pk")


def fairness_key_error(model: type[Any]) -> str | None:
    """What is wrong with `model.fairness_key`, naming the attribute and the accepted form;
    None when it is unset or valid."""
    key = model.fairness_key
    if key is None:
        return None
    refused = f"{model._meta.label}.fairness_key = {key!r} is not valid"
    if not isinstance(key, str) or not key:
        return f"{refused}: expected {FAIRNESS_KEY_FORM}."
    problem = path_problem(model, key.split(LOOKUP_SEP))
    return f"{refused}: {problem}; expected {FAIRNESS_KEY_FORM}." if problem else None


def path_problem(model: type[Any], parts: list[str]) -> str | None:
    """Why the lookup `parts` from `model` is not one value per row, or None."""
    current = model
    for position, part in enumerate(parts):
        try:
            field = current._meta.get_field(part)
        except FieldDoesNotExist:
            return f"{part!r} is not a field of {current._meta.label}"
        if field.many_to_many or field.one_to_many or not field.concrete:
            # A to-many join repeats the row once per related row: one row, several keys.
            return f"{part!r} of {current._meta.label} is not a forward relation or a field"
        following = parts[position + 1 :]
        if following and not field.is_relation:
            return (
                f"{part!r} of {current._meta.label} is not a relation, so the path cannot go "
                f"on to {following[0]!r}"
            )
        current = field.related_model
    return None
