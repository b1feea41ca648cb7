"""Former path, deprecated: `from scheduling import extensions` is the registry.

0.2.0's docs wrote `from scheduling.extensions import extensions`. So that `scheduling.extensions`
is the registry however it was reached (never this module, whatever was imported first), the
registry itself takes this module's place; its `.extensions` answers with itself and warns.
"""

import sys

from scheduling.rows.extensions import extensions

sys.modules[__name__] = extensions  # type: ignore[assignment]  # the registry stands in
