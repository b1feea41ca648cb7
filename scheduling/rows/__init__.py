"""The scheduled row and where it lives: the abstract model and its QuerySet (models.py,
querysets.py), its states, the registry of concrete models, the plug-in registry (extensions.py),
settings (conf.py), policies, what a row publishes (outgoing.py); its history (history/), its
quiet hours (quiet/); and its storage: databases and routers, read replicas (replicas/),
partitions (partitions/, declared with due_partitions.py), retention and purge, migration
operations.

May import the time wing; never delivery or ops."""
