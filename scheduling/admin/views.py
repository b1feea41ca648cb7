"""Former path, deprecated: its names live in `scheduling.ops.admin.views` (internal). Taking a
name from here warns; the path goes in scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.ops.admin.views import add_attention_url

__all__ = ["add_attention_url"]
__getattr__ = forwarding(__name__)
