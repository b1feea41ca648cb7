"""Settings for who a client is and what failed sign-ins cost it; project/settings.py takes
them all. Described in docs/operations.md, "Security"."""

from datetime import timedelta

from project.env import env_int

__all__ = [
    "AUTHENTICATION_BACKENDS",
    "AXES_CLIENT_IP_CALLABLE",
    "AXES_COOLOFF_MESSAGE",
    "AXES_COOLOFF_TIME",
    "AXES_FAILURE_LIMIT",
    "AXES_LOCKOUT_PARAMETERS",
    "AXES_PERMALOCK_MESSAGE",
    "AXES_USERNAME_CALLABLE",
    "AXES_USERNAME_FORM_FIELD",
    "AXES_VERBOSE",
    "NUM_PROXIES",
]

# A request's client is its connecting address (REMOTE_ADDR): X-Forwarded-For is anyone's to
# write. Behind N reverse proxies that each append the address they saw, NUM_PROXIES=N takes
# the Nth address from the right instead. DRF's throttles (REST_FRAMEWORK["NUM_PROXIES"]) and
# django-axes (project.client_ip) read the same rule.
NUM_PROXIES = env_int("NUM_PROXIES", 0)
AXES_CLIENT_IP_CALLABLE = "project.client_ip.client_address"

# django-axes' backend first: it refuses a locked-out client before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# AXES_FAILURE_LIMIT failed sign-ins (API token or admin login) from one address lock it out,
# a correct password included, for AXES_COOLOFF_MINUTES after the last failure (0: until an
# administrator deletes the lockout under Axes > Access attempts in the admin). By address,
# not by username: guessing across many accounts is locked too, and nobody can lock a person
# out of their account from elsewhere.
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_USERNAME_FORM_FIELD = "username"  # plain text: error reports cleanse every setting
AXES_USERNAME_CALLABLE = "project.client_ip.attempted_username"  # bounded to axes' column
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 10, minimum=1)
_cooloff_minutes = env_int("AXES_COOLOFF_MINUTES", 60)
AXES_COOLOFF_TIME = timedelta(minutes=_cooloff_minutes) if _cooloff_minutes else None
AXES_COOLOFF_MESSAGE = (
    "Too many failed sign-ins from your address: signing in is locked for a while. Try again "
    "later, or ask an administrator to lift the lockout."
)
AXES_PERMALOCK_MESSAGE = (
    "Too many failed sign-ins from your address: signing in is locked until an administrator "
    "lifts the lockout."
)
AXES_VERBOSE = False  # no start-up banner: a process that refuses to start says one line
