"""The sweep: run.py takes a model's slot and runs the loop (loop.py: batch after batch, holding
sweeps); batch.py is one batch's transaction (claim, publish, mark), plan.py what it publishes,
sql.py the statements that bypass the ORM, reconcile.py the requeue of rows published but not
handled, daemon.py `manage.py sweep --loop`."""

from scheduling.delivery.sweep.run import sweep

__all__ = ["sweep"]
