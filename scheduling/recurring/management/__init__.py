"""Django's place for the recurring app's management command (commands/recurring_repair)."""
