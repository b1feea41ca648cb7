"""Per-domain scheduling for Django. `scheduling.actor(name)` names who changes rows."""

from scheduling.actors import actor

__all__ = ["actor"]
