"""Public: the operators' views a host mounts in its URLconf.

    path("healthz", healthz), path("metrics", metrics_view)

and `handler400 = bad_request_naming_the_body` (a body that is not JSON gets an answer naming
it, not Django's HTML page); the middleware `scheduling.views.InputRefusals` answers malformed
row ids and over-limit bodies with JSON, and `scheduling.views.BusyDatabaseMiddleware` a busy
database (a lock or statement timeout, no free pooled connection) with a 503 and Retry-After.
"""

from scheduling.ops.busy import BusyDatabaseMiddleware
from scheduling.ops.views import InputRefusals, bad_request_naming_the_body, healthz, metrics_view

__all__ = [
    "BusyDatabaseMiddleware",
    "InputRefusals",
    "bad_request_naming_the_body",
    "healthz",
    "metrics_view",
]
