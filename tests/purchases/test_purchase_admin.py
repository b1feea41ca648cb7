from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import get_messages
from django.http import HttpRequest
from django.utils import timezone

from purchases.models import Purchase, ScheduledPurchase
from purchases.services import purchase_create
from tests.purchases.factories import ArtistFactory, CustomerFactory, ReleaseFactory, TrackFactory

pytestmark = pytest.mark.django_db

Status = ScheduledPurchase.Status
RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
CHANGELIST = "/admin/purchases/scheduledpurchase/"


@pytest.fixture
def staff(admin_client):
    return admin_client


def sold(release=None, **customer):
    release = release or ReleaseFactory(release_date=RELEASE_DAY)
    return purchase_create(customer=CustomerFactory(**customer), release=release)


def rows(*purchases):
    return [p.scheduled.get(track=None) for p in purchases]


def run_action(client, action, selected, url=CHANGELIST, **extra):
    data = {"action": action, ACTION_CHECKBOX_NAME: [row.pk for row in selected], **extra}
    if "apply" not in extra:
        data["index"] = 0
    return client.post(url, data, follow="apply" in extra or action not in FORM_ACTIONS)


FORM_ACTIONS = {"reschedule_rows", "shift_rows"}


def messages_of(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def reload(row):
    row.refresh_from_db()
    return row


def test_the_changelist_shows_status_due_time_customer_release_and_artist(staff):
    artist = ArtistFactory(name="The Band")
    sold(
        ReleaseFactory(artist=artist, title="Loud", release_date=RELEASE_DAY),
        email="ann@example.com",
    )

    response = staff.get(CHANGELIST)

    page = response.content.decode()
    for text in ("Pending", "ann@example.com", "Loud", "The Band", "March 1, 2030"):
        assert text in page


@pytest.mark.parametrize(
    "query",
    [
        "status__exact=pending",
        "q=ann%40example.com",
        "purchase__release__artist__account__id__exact=ACCOUNT",
        "purchase__release__artist__id__exact=ARTIST",
        "due_at__year=2030&due_at__month=3",
    ],
)
def test_the_changelist_filters_and_searches(staff, query):
    artist = ArtistFactory()
    sold(ReleaseFactory(artist=artist, release_date=RELEASE_DAY), email="ann@example.com")
    sold(ReleaseFactory(release_date=RELEASE_DAY + timedelta(days=400)))
    ScheduledPurchase.objects.exclude(purchase__release__artist=artist).update(
        status=Status.CANCELLED
    )
    query = query.replace("ACCOUNT", str(artist.account_id)).replace("ARTIST", str(artist.pk))

    response = staff.get(f"{CHANGELIST}?{query}")

    assert response.status_code == 200
    assert response.context["cl"].result_count == 1


def test_cancel_changes_only_selected_pending_rows_and_says_how_many(staff):
    pending, delivered, untouched = rows(sold(), sold(), sold())
    ScheduledPurchase.objects.filter(pk=delivered.pk).update(status=Status.DELIVERED)

    response = run_action(staff, "cancel_rows", [pending, delivered])

    assert messages_of(response) == ["Cancelled 1 scheduled purchase."]
    assert reload(pending).status == Status.CANCELLED
    assert reload(pending).cancel_reason == "cancelled in the admin by admin"
    assert reload(delivered).status == Status.DELIVERED
    assert reload(untouched).status == Status.PENDING


def test_reschedule_asks_for_a_time_then_moves_the_rows(staff):
    first, second, other = rows(sold(), sold(), sold())

    form = run_action(staff, "reschedule_rows", [first, second])
    assert form.status_code == 200
    assert 'name="due_at"' in form.content.decode()
    assert reload(first).version == 1

    response = run_action(
        staff, "reschedule_rows", [first, second], apply="Reschedule", due_at="2031-05-01T10:00Z"
    )

    assert messages_of(response) == ["Rescheduled 2 scheduled purchases."]
    assert reload(first).due_at == datetime(2031, 5, 1, 10, 0, tzinfo=UTC)
    assert (reload(second).due_at, second.version) == (datetime(2031, 5, 1, 10, 0, tzinfo=UTC), 2)
    assert reload(other).due_at == RELEASE_DAY


@pytest.mark.parametrize("value", ["2031-05-01T10:00", "soon", ""])
def test_reschedule_refuses_a_naive_or_malformed_time(staff, value):
    (row,) = rows(sold())

    response = run_action(staff, "reschedule_rows", [row], apply="Reschedule", due_at=value)

    assert response.status_code == 200
    assert response.context["form"].errors["due_at"]
    assert reload(row).version == 1


def test_reschedule_with_select_across_applies_to_every_filtered_row(staff):
    artist = ArtistFactory()
    mine = rows(*(sold(ReleaseFactory(artist=artist)) for _ in range(3)))
    (other,) = rows(sold())
    url = f"{CHANGELIST}?purchase__release__artist__id__exact={artist.pk}"

    form = run_action(staff, "reschedule_rows", mine[:1], url=url, select_across=1)
    assert 'name="select_across" value="1"' in form.content.decode()
    response = run_action(
        staff,
        "reschedule_rows",
        mine[:1],
        url=url,
        select_across=1,
        apply="Reschedule",
        due_at="2031-05-01T10:00:00+02:00",
    )

    assert messages_of(response) == ["Rescheduled 3 scheduled purchases."]
    assert {reload(row).due_at for row in mine} == {datetime(2031, 5, 1, 8, 0, tzinfo=UTC)}
    assert reload(other).due_at == RELEASE_DAY


def test_shift_moves_rows_by_a_duration(staff):
    (row,) = rows(sold())

    response = run_action(staff, "shift_rows", [row], apply="Shift", delta="P7D")

    assert messages_of(response) == ["Shifted 1 scheduled purchase."]
    assert reload(row).due_at == RELEASE_DAY + timedelta(days=7)


@pytest.mark.parametrize("value", ["a week", "PT0S", "P9999999999D", "-P36526D"])
def test_shift_refuses_a_bad_zero_or_too_large_duration(staff, value):
    (row,) = rows(sold())

    response = run_action(staff, "shift_rows", [row], apply="Shift", delta=value)

    assert response.context["form"].errors["delta"]
    assert reload(row).version == 1


def test_deliver_now_and_retry(staff):
    future, failed = rows(sold(), sold())
    ScheduledPurchase.objects.filter(pk=failed.pk).update(status=Status.FAILED, attempts=5)

    now = run_action(staff, "deliver_now", [future, failed])
    assert messages_of(now) == ["Made due now: 1 scheduled purchase."]
    assert reload(future).due_at <= timezone.now()

    retried = run_action(staff, "retry_rows", [future, failed])
    assert messages_of(retried)[-1] == "Back to pending: 1 scheduled purchase."
    assert (reload(failed).status, failed.attempts) == (Status.PENDING, 0)


def test_staff_without_the_change_permission_get_no_actions(client, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("looker", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_scheduledpurchase"))
    client.login(request=HttpRequest(), username="looker", password="pw")  # django-axes asks
    (row,) = rows(sold())

    response = client.get(CHANGELIST)
    assert response.status_code == 200
    assert "reschedule_rows" not in response.content.decode()
    run_action(client, "cancel_rows", [row])
    assert reload(row).status == Status.PENDING


def test_changing_the_release_date_in_the_admin_moves_the_rows(staff):
    purchase = sold()
    release = purchase.release
    track = TrackFactory(release=release, title="Single")
    page = f"/admin/purchases/release/{release.pk}/change/"
    assert "1 pending" in staff.get(page).content.decode()

    response = staff.post(
        page,
        {
            "artist": release.artist_id,
            "title": release.title,
            "release_date_0": "2030-04-01",
            "release_date_1": "09:00:00",
            "tracks-TOTAL_FORMS": 1,
            "tracks-INITIAL_FORMS": 1,
            "tracks-0-id": track.pk,
            "tracks-0-release": release.pk,
            "tracks-0-position": 1,
            "tracks-0-title": "Single",
            "tracks-0-release_date_0": "2030-02-01",
            "tracks-0-release_date_1": "09:00:00",
        },
    )

    assert response.status_code == 302, response.context["errors"] if response.context else ""
    whole = purchase.scheduled.get(track=None)
    assert (whole.due_at, whole.version) == (datetime(2030, 4, 1, 9, 0, tzinfo=UTC), 2)
    assert purchase.scheduled.get(track=track).due_at == datetime(2030, 2, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("field", "date"),
    [
        ("release_date", "0001-01-01"),
        ("release_date", "9999-12-31"),
        ("tracks-0-release_date", "1969-12-31"),
    ],
)
def test_a_date_out_of_range_in_the_admin_is_a_form_error_and_moves_nothing(staff, field, date):
    purchase = sold()
    release = purchase.release
    track = TrackFactory(release=release, title="Single")
    page = f"/admin/purchases/release/{release.pk}/change/"
    data = {
        "artist": release.artist_id,
        "title": release.title,
        "release_date_0": "2030-04-01",
        "release_date_1": "09:00:00",
        "tracks-TOTAL_FORMS": 1,
        "tracks-INITIAL_FORMS": 1,
        "tracks-0-id": track.pk,
        "tracks-0-release": release.pk,
        "tracks-0-position": 1,
        "tracks-0-title": "Single",
        "tracks-0-release_date_0": "2030-02-01",
        "tracks-0-release_date_1": "09:00:00",
    }

    response = staff.post(page, {**data, f"{field}_0": date})

    assert response.status_code == 200
    assert "1970 to 9000" in response.content.decode()
    release.refresh_from_db()
    assert release.release_date == RELEASE_DAY
    assert {(row.due_at, row.version) for row in purchase.scheduled.all()} == {(RELEASE_DAY, 1)}


def test_the_release_page_lists_its_first_50_rows_soonest_pending_first(staff):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    single = TrackFactory(release=release, title="Lead Single", release_date=RELEASE_DAY)
    purchases = [sold(release, email=f"buyer{n:02}@example.com") for n in range(30)]
    ScheduledPurchase.objects.filter(purchase=purchases[0]).update(status=Status.DELIVERED)
    soonest = purchases[29].scheduled.get(track=single)
    ScheduledPurchase.objects.filter(pk=soonest.pk).update(due_at=RELEASE_DAY - timedelta(days=3))
    other = sold(email="elsewhere@example.com")

    page = staff.get(f"/admin/purchases/release/{release.pk}/change/").content.decode()

    table = page[page.index('<table class="scheduled-rows">') :]
    table = table[: table.index("</table>")]
    lines = table.split("<tr>")[2:]
    assert len(lines) == 50
    assert soonest.event_id in lines[0]
    assert f"#{purchases[29].pk}" in lines[0]
    assert "@example.com" not in table  # a release's page shows no customer (DATA_RULES)
    assert "Lead Single" in lines[0]
    assert all("pending" in line for line in lines)
    assert f"#{purchases[0].pk}<" not in table  # delivered: after the 58 pending rows
    assert other.scheduled.get().event_id not in table
    assert "2 delivered, 58 pending" in page
    assert f"?purchase__release__id__exact={release.pk}" in page


def test_the_purchase_page_shows_its_rows_inline_and_refunds(staff):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    TrackFactory(release=release, title="Early", release_date=RELEASE_DAY - timedelta(days=9))
    purchase = sold(release)

    page = staff.get(f"/admin/purchases/purchase/{purchase.pk}/change/").content.decode()
    assert "Early" in page
    assert page.count("Pending") >= 2

    response = staff.post(
        "/admin/purchases/purchase/",
        {"action": "refund", ACTION_CHECKBOX_NAME: [purchase.pk], "index": 0},
        follow=True,
    )
    assert messages_of(response) == ["Refunded 1 purchases; cancelled 2 scheduled emails."]
    purchase.refresh_from_db()
    assert purchase.status == Purchase.Status.REFUNDED


def test_every_store_model_has_an_admin_page(staff):
    sold()
    for model in ("account", "artist", "release", "customer", "purchase", "scheduledpurchase"):
        assert staff.get(f"/admin/purchases/{model}/").status_code == 200
    row = ScheduledPurchase.objects.get()
    assert staff.get(f"{CHANGELIST}{row.pk}/change/").status_code == 200
    assert staff.get(f"{CHANGELIST}add/").status_code == 403
