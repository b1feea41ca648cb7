"""A test-only domain on a database of its own ("second", by SCHEDULING_DATABASES): Account is
the entity, ScheduledReminder its scheduled row, ReminderSent the handler's effect."""
