"""Settings of the trainings' push backend (TRAININGS_PUSH_*); project/settings.py takes them
all. Described in docs/push.md."""

from project.env import env_class_path, env_float, env_str, env_url

__all__ = [
    "TRAININGS_PUSH_BACKEND",
    "TRAININGS_PUSH_CONNECT_TIMEOUT",
    "TRAININGS_PUSH_PROJECT",
    "TRAININGS_PUSH_TIMEOUT",
    "TRAININGS_PUSH_TOKEN",
    "TRAININGS_PUSH_URL",
]

# The backend class: trainings.push.RecordingPushBackend (stores a PushNotification per player),
# trainings.push.LoggingPushBackend or trainings.push.HttpPushBackend (below). Judged here by
# its text (nothing imported); the trainings app imports and checks the class as it starts.
TRAININGS_PUSH_BACKEND = env_class_path(
    "TRAININGS_PUSH_BACKEND", "trainings.push.RecordingPushBackend"
)
# trainings.push.HttpPushBackend: FCM HTTP v1 at {TRAININGS_PUSH_URL}/v1/projects/{PROJECT}/
# messages:send with `Authorization: Bearer {TOKEN}`; each request may take CONNECT_TIMEOUT
# seconds to connect and TIMEOUT seconds for each read (docs/push.md).
TRAININGS_PUSH_URL = env_url(
    "TRAININGS_PUSH_URL", "https://fcm.googleapis.com", schemes=("https", "http")
)
TRAININGS_PUSH_PROJECT = env_str("TRAININGS_PUSH_PROJECT", "")
TRAININGS_PUSH_TOKEN = env_str("TRAININGS_PUSH_TOKEN", "")
TRAININGS_PUSH_TIMEOUT = env_float("TRAININGS_PUSH_TIMEOUT", 10.0, maximum=300)
TRAININGS_PUSH_CONNECT_TIMEOUT = env_float("TRAININGS_PUSH_CONNECT_TIMEOUT", 3.0, maximum=300)
