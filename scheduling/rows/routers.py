"""A ready database router for hosts that put a domain on a database of its own
(docs/databases.md):

    DATABASE_ROUTERS = ["scheduling.rows.routers.AppDatabaseRouter"]
    SCHEDULING_DATABASES = {"billing": "billing_db"}

Each named app's models are read, written and migrated on its alias; the `scheduling` app (its
history table, whose entries are written in the transaction of the row they are about) is
migrated on every alias named as well as on the default one. A named alias other than
"default" holds nothing else; every other model is left to the next router (Django's default:
"default"). The framework itself relies only on db_for_write and allow_migrate, so a host may
write its own router instead.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, models

SETTING = "SCHEDULING_DATABASES"
FORM = 'a dict of app label to database alias, e.g. {"billing": "billing_db"}'
CORE_APP = "scheduling"  # its EventHistory goes wherever scheduled rows are


def app_databases() -> dict[str, str]:
    """SCHEDULING_DATABASES as set; {} when unset or not a dict (the check reports that)."""
    value = getattr(settings, SETTING, {})
    if not isinstance(value, dict):
        return {}
    return {label: alias for label, alias in value.items() if isinstance(alias, str)}


class AppDatabaseRouter:
    """Routes the apps SCHEDULING_DATABASES names to their aliases."""

    def alias_of(self, model: type[models.Model]) -> str | None:
        return app_databases().get(model._meta.app_label)

    def db_for_read(self, model: type[models.Model], **hints: Any) -> str | None:
        return self.alias_of(model)

    def db_for_write(self, model: type[models.Model], **hints: Any) -> str | None:
        return self.alias_of(model)

    def allow_relation(self, obj1: models.Model, obj2: models.Model, **hints: Any) -> bool | None:
        first, second = self.alias_of(type(obj1)), self.alias_of(type(obj2))
        if first is None and second is None:
            return None
        # A foreign key cannot cross databases: PostgreSQL enforces it within one.
        return (first or DEFAULT_DB_ALIAS) == (second or DEFAULT_DB_ALIAS)

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        mapped = app_databases()
        if app_label in mapped:
            return mapped[app_label] == db
        if app_label == CORE_APP and db in mapped.values():
            return True
        if db in mapped.values() and db != DEFAULT_DB_ALIAS:
            return False  # a domain's own database holds that domain (and the history)
        return None


def setting_errors() -> list[str]:
    """What is wrong with SCHEDULING_DATABASES: its form, an alias DATABASES lacks, an app
    label no installed app has."""
    value = getattr(settings, SETTING, {})
    if not isinstance(value, dict):
        return [f"{SETTING}={value!r} is not valid: expected {FORM}."]
    errors = []
    labels = {config.label for config in apps.get_app_configs()}
    for label, alias in value.items():
        if not isinstance(label, str) or not isinstance(alias, str):
            errors.append(f"{SETTING}[{label!r}]={alias!r} is not valid: expected {FORM}.")
        elif alias not in settings.DATABASES:
            known = ", ".join(sorted(settings.DATABASES))
            errors.append(
                f"{SETTING}[{label!r}]={alias!r} names no database: expected an alias of "
                f"DATABASES, one of: {known}."
            )
        elif label not in labels:
            errors.append(
                f"{SETTING} names the app {label!r}, which is not installed: expected an app "
                f"label of INSTALLED_APPS (e.g. {sorted(labels)[0]!r})."
            )
    return errors
