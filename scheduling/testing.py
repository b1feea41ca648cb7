"""Public: helpers for a host's own tests (docs: Testing).

    from scheduling.testing import run_due, assert_scheduled, scheduled

The same names are in the facade, `scheduling`.
"""

from scheduling.delivery.testing import assert_scheduled, run_due, scheduled

__all__ = ["assert_scheduled", "run_due", "scheduled"]
