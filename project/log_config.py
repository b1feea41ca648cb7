"""The demo's LOGGING: every logger writes through one console handler, as text or as one
JSON object per line (LOG_FORMAT=json, project/logging.py's formatter)."""

from typing import Any


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "download_tokens": {"()": "project.redaction.RedactDownloadTokens"},
            "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
        },
        "formatters": {
            "text": {"format": "%(message)s"},
            "json": {"()": "project.logging.JsonFormatter"},
        },
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": log_format},
            "mail_admins": {
                "level": "ERROR",
                "filters": ["require_debug_false"],
                "class": "django.utils.log.AdminEmailHandler",
            },
        },
        "loggers": {
            # Django's own defaults give "django" a console handler of its own (and "django.server"
            # a plain formatter) on top of the root's: each line then came out twice, or not as
            # JSON. Here every logger writes through the one console handler, once.
            "django": {"handlers": ["console", "mail_admins"], "level": "INFO", "propagate": False},
            "django.server": {
                "handlers": ["console"],
                "filters": ["download_tokens"],  # its access lines name the path
                "level": "INFO",
                "propagate": False,
            },
            "django.request": {"filters": ["download_tokens"]},
            # The HTTP push backend's client logs every request at INFO: the results are rows.
            "httpx": {"level": "WARNING"},
        },
        "root": {"handlers": ["console"], "level": level},
    }
