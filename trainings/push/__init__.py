"""Push backends. TRAININGS_PUSH_BACKEND names the class.

RecordingPushBackend (the default) and LoggingPushBackend need no credentials and stay for
development and tests (`backends`). HttpPushBackend (`http`) sends through an FCM HTTP
v1-shaped service (`fcm`: the request and what an answer comes to) and records what each
player's push came to in PushResult (`results`), docs/push.md.
"""

from trainings.push.backends import (
    LoggingPushBackend,
    Push,
    PushBackend,
    RecordingPushBackend,
    get_push_backend,
)
from trainings.push.http import HttpPushBackend, PushRetryLater

__all__ = [
    "HttpPushBackend",
    "LoggingPushBackend",
    "Push",
    "PushBackend",
    "PushRetryLater",
    "RecordingPushBackend",
    "get_push_backend",
]
