"""LimitOffsetPagination whose limit and offset always fit the database's bigint."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.settings import api_settings

from scheduling.ops.api.params import whole_number

MAX_LIMIT = 1000
MAX_OFFSET = 2**63 - 1  # PostgreSQL's OFFSET is a bigint: larger values are a server error


HISTORY_PAGE_SIZE = 100


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT
    default_limit = api_settings.PAGE_SIZE or 100  # never a whole table for want of PAGE_SIZE

    def get_limit(self, request: Request) -> int | None:
        value = request.query_params.get(self.limit_query_param)
        if value is None:
            return self.default_limit
        # A limit above the most is capped to it (DRF's rule), not refused.
        return min(whole_number(self.limit_query_param, value, low=1), self.max_limit)

    def get_offset(self, request: Request) -> int:
        value = request.query_params.get(self.offset_query_param)
        return (
            0
            if value is None
            else whole_number(self.offset_query_param, value, low=0, high=MAX_OFFSET)
        )


class HistoryPagination(BoundedLimitOffsetPagination):
    """A row's timeline: HISTORY_PAGE_SIZE entries a page (`?limit=` up to MAX_LIMIT), oldest
    first; the view counts and slices the timeline itself (it is no queryset)."""

    default_limit = HISTORY_PAGE_SIZE

    def page_bounds(self, request: Request, count: int) -> tuple[int, int]:
        """The offset and limit of the page asked for, remembered for the links."""
        self.request, self.count = request, count
        self.limit = self.get_limit(request) or self.default_limit
        self.offset = self.get_offset(request)
        return self.offset, self.limit
