"""`runserver` whose own lines (system checks, the start banner, errors) are log records when
LOG_FORMAT=json, so every line the web process writes is JSON."""

import logging
from typing import Any, TextIO, cast

from django.conf import settings
from django.contrib.staticfiles.management.commands.runserver import Command as StaticRunserver
from django.core.management.base import OutputWrapper
from django.core.management.color import no_style

log = logging.getLogger("django.server")


class LogLines:
    """A text stream whose every write is one log record (blank writes are dropped)."""

    def __init__(self, level: int) -> None:
        self.level = level

    def write(self, text: str) -> int:
        if text.strip():
            log.log(self.level, text.strip())
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class Command(StaticRunserver):
    def handle(self, *args: Any, **options: Any) -> Any:
        if settings.LOG_FORMAT == "json":
            self.stdout = OutputWrapper(cast(TextIO, LogLines(logging.INFO)))
            self.stderr = OutputWrapper(cast(TextIO, LogLines(logging.ERROR)))
            self.style = no_style()
        return super().handle(*args, **options)
