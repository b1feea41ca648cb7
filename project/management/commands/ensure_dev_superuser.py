import os
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "With DEBUG on and no superuser yet, create `admin` (password $ADMIN_PASSWORD or admin)."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        if not settings.DEBUG or users.objects.filter(is_superuser=True).exists():
            return
        password = os.environ.get("ADMIN_PASSWORD", "admin")
        users.objects.create_superuser("admin", "admin@localhost", password)
        self.stdout.write("created the development superuser `admin` (DEBUG only)")
