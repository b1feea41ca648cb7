"""What a worker runs for each event: the effect-once guard (once.py: handle_once, effect_begins),
batched handling (batches.py), the statements they run (sql.py), the signals hosts connect to
(signals.py), django.tasks handlers (task_handlers.py), and the worker's kept connections
(connections.py)."""
