"""Text that ends up in an email header: the fulfillment email's subject names the artist and
the release or track title. One line, no control characters, refused at input."""

import re

from django.core.exceptions import ValidationError

# C0 and C1 control characters (newline, carriage return, tab …) and Unicode's line and
# paragraph separators: email headers are one line, and Django refuses a newline at send time.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

ONE_LINE_FORM = (
    "Enter one line of text without control characters (such as a newline or a tab): it goes "
    "into email subjects."
)


def one_line(value: str) -> None:
    """The model fields' validator, so admin forms and API serializers refuse alike."""
    if CONTROL_CHARACTERS.search(value):
        raise ValidationError(ONE_LINE_FORM, code="control_characters")


def header_text(value: str) -> str:
    """The value on one line: each run of control characters becomes one space.

    The send-time fallback for rows stored before the validator: their email goes out with a
    readable subject instead of failing with BadHeaderError."""
    return CONTROL_CHARACTERS.sub(" ", value).strip()
