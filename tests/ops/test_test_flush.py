"""The test settings' flush (tests/testapp/management/commands/flush.py), as TransactionTestCase
calls it after each test that commits: what the test wrote goes, what migrate made stays."""

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from tests.remoteapp.models import Account as RemoteAccount

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def flush_after_a_test(database: str = "default") -> None:
    call_command("flush", database=database, interactive=False, reset_sequences=False, verbosity=0)


def test_the_rows_a_test_wrote_go_and_the_content_types_and_permissions_stay():
    permissions, content_types = Permission.objects.count(), ContentType.objects.count()
    user = User.objects.create_user("someone")
    user.user_permissions.add(Permission.objects.get(codename="view_purchase"))
    RemoteAccount.objects.create(name="remote")  # on the "second" database

    flush_after_a_test()
    flush_after_a_test("second")

    assert not User.objects.exists()
    assert not User.user_permissions.through.objects.exists()
    assert not RemoteAccount.objects.exists()
    assert (Permission.objects.count(), ContentType.objects.count()) == (
        permissions,
        content_types,
    )


def test_a_test_that_changed_the_permissions_gets_them_back_as_migrate_made_them():
    Permission.objects.filter(codename="view_purchase").delete()
    Permission.objects.filter(codename="add_purchase").update(name="renamed")
    Permission.objects.create(
        codename="made_by_a_test",
        name="made by a test",
        content_type=ContentType.objects.get_for_model(User),
    )

    flush_after_a_test()

    assert Permission.objects.filter(codename="view_purchase").exists()
    assert Permission.objects.get(codename="add_purchase").name == "Can add purchase"
    assert not Permission.objects.filter(codename="made_by_a_test").exists()
