"""The recurring app's raw SQL, by name: the statements the sweep's chain step runs on
PostgreSQL, where one statement over arrays replaces a query per row."""

INSERT_PENDING = """
INSERT INTO scheduled_occurrence (schedule_id, schedule_version, due_at, missed_run, catch_up,
    business_due_at, manual, status, version, attempts, cancel_reason, last_error, created_at,
    updated_at)
SELECT schedule_id, schedule_version, due_at, missed_run, catch_up,
    business_due_at, false, 'pending', 1, 0, '', '', now(), now()
FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[], %s::integer[], %s::boolean[],
    %s::timestamptz[])
    AS successor(schedule_id, schedule_version, due_at, missed_run, catch_up, business_due_at)
ON CONFLICT DO NOTHING
"""

# GREATEST ignores NULLs: an expired row (fired NULL) leaves last_fired_at as it is. Grouped
# first: UPDATE ... FROM uses one joined row per target, and a catch-up fires several at once.
# fire_count counts first publications only (a retried row was counted when it first fired).
HOLD_SCHEDULES = """
UPDATE recurring_schedule AS schedule
SET last_fired_at = GREATEST(schedule.last_fired_at, fire.fired_at),
    fire_count = schedule.fire_count + fire.fires
FROM (
    SELECT schedule_id, max(fired_at) AS fired_at,
        count(*) FILTER (WHERE fired_at IS NOT NULL AND first) AS fires
    FROM unnest(%s::bigint[], %s::timestamptz[], %s::boolean[]) AS f(schedule_id, fired_at, first)
    GROUP BY schedule_id
) AS fire
WHERE schedule.id = fire.schedule_id AND schedule.id IN (
    SELECT id FROM recurring_schedule WHERE id = ANY(%s::bigint[])
    ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
)
RETURNING schedule.id, schedule.fire_count
"""

# Tracing (docs/tracing.md): new pending occurrences take their schedule's creation context, the
# context of its last create or edit.
INHERIT_SCHEDULE_CONTEXT = """
INSERT INTO scheduling_creation_context (model, row_id, traceparent, tracestate)
SELECT %s, occurrence.id, context.traceparent, context.tracestate
FROM scheduled_occurrence AS occurrence
JOIN scheduling_creation_context AS context
    ON context.model = %s AND context.row_id = occurrence.schedule_id
WHERE occurrence.schedule_id = ANY(%s::bigint[]) AND occurrence.status = 'pending'
ON CONFLICT (model, row_id) DO NOTHING
"""
