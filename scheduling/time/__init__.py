"""Time, and nothing of rows: IANA zones (zones.py), parsing what people type (parsing.py), the
due times a scheduled table can store (times.py), and stored calendars (calendars/: rules,
parsing, the Calendar model and its per-process cache).

The lowest wing: it imports no other wing of the framework."""
