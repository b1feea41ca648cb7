"""Quiet hours, in one place: what a model declares and the spans it excludes (hours.py), how
they hold, fold or skip rows as they are created or moved (holds.py), and how the admin shows
them on a row (described.py)."""
