"""The framework's Celery wiring, through Celery's own signals: the host writes Celery's three
lines ("First steps with Django") and nothing for scheduling.

Connected from SchedulingConfig.ready(), which Celery's Django fix-up runs (django.setup())
while a worker or beat loads its task modules, before either sends the signals below.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from celery import signals
from django.utils.log import RequireDebugTrue


def connect() -> None:
    # Connected first: the receivers below read the settings this one vets.
    for signal in (signals.celeryd_init, signals.beat_init):
        signal.connect(refuse_to_start, weak=False, dispatch_uid="scheduling.refuse_to_start")
    for signal in (signals.celeryd_init, signals.beat_init):
        signal.connect(
            warn_unknown_settings, weak=False, dispatch_uid="scheduling.rows.setting_names"
        )
    signals.beat_init.connect(add_sweep_entries, weak=False, dispatch_uid="scheduling.beat")
    signals.celeryd_init.connect(
        consume_scheduling_queues, weak=False, dispatch_uid="scheduling.queues"
    )
    signals.celeryd_init.connect(embed_beat, weak=False, dispatch_uid="scheduling.beat.embedded")
    signals.worker_process_shutdown.connect(
        write_buffered_counts, weak=False, dispatch_uid="scheduling.counts"
    )
    signals.after_setup_logger.connect(
        one_line_per_record, weak=False, dispatch_uid="scheduling.log_lines"
    )
    signals.worker_init.connect(
        keep_connections, weak=False, dispatch_uid="scheduling.delivery.handling.connections"
    )


def refuse_to_start(**kwargs: Any) -> None:
    """A worker (celeryd_init: before its banner, -B's beat or any consumer) or beat with a
    configuration the system checks call an Error exits at once, one line per error.

    Celery logs what a signal receiver raises and carries on, except SystemExit.
    """
    from scheduling.delivery.checks import configuration_errors

    errors = configuration_errors()
    for error in errors:
        print(error.msg, file=sys.stderr, flush=True)
    if errors:
        raise SystemExit(1)


def one_line_per_record(logger: logging.Logger, **kwargs: Any) -> None:
    """Celery has given the root logger its console (a worker, beat): Django's default console
    handler on the "django" logger, which also propagates to the root, would print every
    django.* line a second time when DEBUG is on, django.tasks' "Task id=... state=..." among
    them. That handler alone goes (as Django's DEFAULT_LOGGING makes it: a plain stream handler
    for DEBUG only); the root prints each line once, DEBUG or not. A "django" logger the host
    configured not to propagate, or with handlers of its own, is left as it is."""
    django_logger = logging.getLogger("django")
    if not (django_logger.propagate and logger.handlers):
        return
    for handler in list(django_logger.handlers):
        if type(handler) is logging.StreamHandler and any(
            isinstance(each, RequireDebugTrue) for each in handler.filters
        ):
            django_logger.removeHandler(handler)


def warn_unknown_settings(**kwargs: Any) -> None:
    """A SCHEDULING_* setting the framework does not know (a misspelling) is logged at start."""
    from scheduling.rows.setting_names import log_unknown_settings

    log_unknown_settings()


def add_sweep_entries(sender: Any, **kwargs: Any) -> None:
    """Beat (`celery beat`, or a worker's `-B`): one sweep entry per scheduled model and slot.

    beat_init comes after the scheduler has read `beat_schedule`, so the entries go to the
    scheduler itself; an entry of the host's with the same name wins.
    """
    from scheduling.rows.registry import beat_schedule

    scheduler = sender.scheduler
    own = scheduler.app.conf.beat_schedule or {}
    scheduler.update_from_dict({k: v for k, v in beat_schedule().items() if k not in own})


def consume_scheduling_queues(sender: str, instance: Any, conf: Any, **kwargs: Any) -> None:
    """A worker consumes the sweep queue, every scheduled model's queue and the queues of
    django.tasks' SchedulingBackend (TASKS' QUEUES).

    celeryd_init comes before the worker applies `-Q`: a plain worker consumes these queues
    besides Celery's default one, and `-Q` still narrows to what it names.
    """
    from scheduling.rows.djangotasks import backend_queues
    from scheduling.rows.registry import queue_names

    queues = instance.app.amqp.queues
    for name in sorted({*queue_names(), *backend_queues()}):
        # A queue the host declared (CELERY_TASK_QUEUES) keeps its declaration; any other is
        # declared as Celery declares a missing queue (quorum, with CELERY_BROKER_QUORUM_QUEUES).
        queues.select_add(queues.get(name) or queues.new_missing(name))


def embed_beat(sender: str, instance: Any, conf: Any, **kwargs: Any) -> None:
    """A worker's `-B` beat runs the framework's scheduler (no SQLite schedule file to lose
    across the fork: scheduling.delivery.beat) unless the host chose its own, and the worker
    stops, exit code 1, if that beat dies."""
    from scheduling.delivery.beat import use_framework_scheduler, watch_embedded_beat

    use_framework_scheduler(conf)
    watch_embedded_beat(instance.app)


def keep_connections(sender: Any, **kwargs: Any) -> None:
    """A worker keeps its database connections across tasks (scheduling.delivery.handling.connections)."""
    from scheduling.delivery.handling.connections import keep_connections_between_tasks
    from scheduling.rows.conf import scheduling_settings

    if scheduling_settings().worker_keeps_connections:
        keep_connections_between_tasks(sender.app)


def write_buffered_counts(**kwargs: Any) -> None:
    """A worker child that stops writes the handlers' counts it buffered (scheduling.delivery.metrics)."""
    from scheduling.delivery.metrics import flush_counts

    flush_counts()
