"""Calendars: named, stored sets of excluded time (holidays, daily windows, weekly days, in a
time zone, composed in order) that schedules and scheduled models consult.

rules.py evaluates (pure, no database, no clock), parsing.py reads the stored lists,
models.py stores them, store.py loads a calendar with those it composes, references.py says
who uses one; admin.py and api.py serve them."""
