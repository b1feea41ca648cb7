from django.contrib import admin
from scheduling.admin import AuditedAdmin, ScheduledEventAdmin, ScheduledEventInline

from .models import Order, ScheduledOrderEmail


class ScheduledOrderEmailInline(ScheduledEventInline):
    model = ScheduledOrderEmail


@admin.register(Order)
class OrderAdmin(AuditedAdmin):
    inlines = (ScheduledOrderEmailInline,)


@admin.register(ScheduledOrderEmail)
class ScheduledOrderEmailAdmin(ScheduledEventAdmin):
    list_per_page = 50
