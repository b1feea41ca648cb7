"""DRF's JSON parser, refusing bodies nested too deeply with a 400 instead of a 500.

json.loads raises RecursionError a few hundred levels down, and the recursive checks and
encoders after it (payload templates, json.dumps) would fail the same way a little earlier.
"""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from scheduling.rows.jsonvalues import json_depth

MAX_JSON_DEPTH = 64
TOO_DEEP = f"JSON parse error - the body is nested deeper than {MAX_JSON_DEPTH} levels."


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(TOO_DEEP) from None
        if json_depth(data) > MAX_JSON_DEPTH:
            raise ParseError(TOO_DEEP)
        return data
