"""The recurring app's raw SQL, by name: the statements the sweep's chain step runs on
PostgreSQL, where one statement over arrays replaces a query per row."""

INSERT_PENDING = """
INSERT INTO scheduled_occurrence (schedule_id, schedule_version, due_at, missed_run, catch_up,
    manual, status, version, attempts, cancel_reason, last_error, created_at, updated_at)
SELECT schedule_id, schedule_version, due_at, missed_run, catch_up,
    false, 'pending', 1, 0, '', '', now(), now()
FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[], %s::integer[], %s::boolean[])
    AS successor(schedule_id, schedule_version, due_at, missed_run, catch_up)
ON CONFLICT DO NOTHING
"""

# GREATEST ignores NULLs: an expired row (fired NULL) leaves last_fired_at as it is.
HOLD_SCHEDULES = """
UPDATE recurring_schedule AS schedule
SET last_fired_at = GREATEST(schedule.last_fired_at, fire.fired_at)
FROM unnest(%s::bigint[], %s::timestamptz[]) AS fire(schedule_id, fired_at)
WHERE schedule.id = fire.schedule_id AND schedule.id IN (
    SELECT id FROM recurring_schedule WHERE id = ANY(%s::bigint[])
    ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
)
RETURNING schedule.id
"""
