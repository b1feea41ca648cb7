"""Recurring schedules, an optional app ("scheduling.recurring"): cron schedules with time zones,
DST and overlap policies and payload templates, whose next occurrence is a scheduled row the
core delivers; cron/ is the grammar and the next-fire search. It may import every wing; no
wing imports it."""
