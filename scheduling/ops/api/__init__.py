"""The REST API for scheduled models (generic per-model routes, serializers, filters, paging,
throttles) and for calendars; `urls.py` is what a host includes."""
