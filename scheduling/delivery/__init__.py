"""From due to handled: the sweep (sweep/), publishing to the broker (publishing/), the handling
a worker runs (handling/), the Celery tasks and wiring (tasks.py, celery.py), the sweep locks and
rate limits, the counters (metrics/), the system checks, and the helpers for a host's own tests
(testing.py).

May import rows and time; never ops."""
