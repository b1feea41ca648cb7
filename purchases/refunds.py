"""A refund's confirmation email: a django.tasks task on the framework's SchedulingBackend
(TASKS in project/settings.py, docs/django-tasks.md).

purchase_refund enqueues it in the refund's transaction, so a refund that rolls back sends
nothing; the sweep delivers it and a worker runs it with the jobs' retries. At least once: a
worker lost between the send and its commit may send it again, which a confirmation tolerates.
"""

from __future__ import annotations

from django.core.mail import send_mail

from purchases.headers import header_text
from purchases.models import Purchase
from scheduling.jobs.backends import task


@task
def send_refund_confirmation(purchase_id: int) -> str:
    purchase = Purchase.objects.select_related("customer", "release__artist").get(pk=purchase_id)
    if purchase.status != Purchase.Status.REFUNDED:
        return "not refunded"
    release = purchase.release
    send_mail(
        subject=header_text(f"Your refund: {release.artist.name} - {release.title}"),
        message=f"Hello {purchase.customer.name or purchase.customer.email},\n\n"
        f"your pre-order of {release.title} is refunded; nothing will be sent for it.\n",
        from_email=None,
        recipient_list=[purchase.customer.email],
    )
    return "sent"
