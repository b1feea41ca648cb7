"""django.tasks functions for the SchedulingBackend tests (tests/scheduling/jobs/test_django_tasks.py)."""

from typing import Any

from scheduling.rows.djangotasks import task

handled_events: list[str] = []


@task
def add(a: int, b: int) -> int:
    return a + b


@task
def fail(message: str) -> None:
    raise RuntimeError(message)


@task
async def double(n: int) -> int:
    return n * 2


@task(takes_context=True)
def which_attempt(context: Any) -> int:
    return int(context.attempt)


@task(queue_name="emails")
def send_email(to: str) -> str:
    return f"sent to {to}"


@task
def too_much() -> str:
    return "x" * 100_000


@task
def as_tuple() -> tuple[int, int]:
    return (1, 2)


@task
def handle_ping(event: dict[str, Any]) -> None:
    """A scheduled model's handler_task given as a @task."""
    handled_events.append(event["id"])


@task
def fail_ping(event: dict[str, Any]) -> None:
    raise RuntimeError(f"cannot handle {event['id']}")
