"""LimitOffsetPagination whose limit and offset always fit the database's bigint."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.settings import api_settings

MAX_LIMIT = 1000
MAX_OFFSET = 2**63 - 1  # PostgreSQL's OFFSET is a bigint: larger values are a server error


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT
    default_limit = api_settings.PAGE_SIZE or 100  # never a whole table for want of PAGE_SIZE

    def get_offset(self, request: Request) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            raise serializers.ValidationError(
                {self.offset_query_param: f"Enter a whole number from 0 to {MAX_OFFSET}."}
            )
        return offset
