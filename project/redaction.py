"""Secrets kept out of logs and error reports.

Django's SafeExceptionReporterFilter already hides settings, request headers (Authorization,
Cookie) and cookies whose names look sensitive, and POST values a view marks with
@sensitive_post_parameters. It does not hide a password inside a URL-valued setting
(DATABASE_URL, REDIS_URL, CELERY_BROKER_URL), nor a POST value an unmarked view received.
"""

import logging
import re
from typing import Any

from django.http import HttpRequest, QueryDict
from django.utils.datastructures import MultiValueDict
from django.views.debug import SafeExceptionReporterFilter

URL_PASSWORD = re.compile(r"(?P<scheme>\w[\w+.-]*://[^:/@\s]*):[^@/\s]+@")
# A download link's token is the credential (purchases.api.views.DownloadView).
DOWNLOAD_TOKEN = re.compile(r"(?P<path>/downloads/)[^/\s?#]+")
REDACTED = SafeExceptionReporterFilter.cleansed_substitute


class ReporterFilter(SafeExceptionReporterFilter):
    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str):
            return URL_PASSWORD.sub(rf"\g<scheme>:{REDACTED}@", cleansed)
        return cleansed

    def get_post_parameters(self, request: HttpRequest | None) -> Any:
        """As Django's, and a value whose name looks sensitive (password, token...) is hidden."""
        params = super().get_post_parameters(request)
        if not self.is_active(request) or not isinstance(params, (QueryDict, MultiValueDict)):
            return params
        params = params.copy()
        for name in params:
            if self.hidden_settings.search(name):
                params[name] = self.cleansed_substitute
        return params


class RedactDownloadTokens(logging.Filter):
    """django.request logs the path of a 404/410 ("Gone: /api/downloads/<token>/")."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = DOWNLOAD_TOKEN.sub(rf"\g<path>{REDACTED}", message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True
