"""Pausing a scheduled model's delivery: operator state shared by every sweeper of every host
(models.py: one row per paused model and the history of pauses and resumes; services.py: pause,
resume, and what a sweep asks each tick)."""
