from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin import helpers
from django.contrib.auth.models import User

from scheduling.rows.models import ScheduledEvent
from tests.trainings.factories import TeamFactory
from trainings.kinds import NotificationKind, Phase
from trainings.models import PushNotification, ScheduledTrainingNotification, Training
from trainings.services import questionnaire_answer, training_create

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
PRE, POST, INVITATION = NotificationKind
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
END = START + timedelta(hours=1)
ROWS = "/admin/trainings/scheduledtrainingnotification/"
TRAININGS = "/admin/trainings/training/"


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("admin", password="x"))
    return client


@pytest.fixture
def training(team, players, frozen):
    return training_create(team=team, start_at=START, end_at=END, invitations_enabled=True)


def rows(training):
    return ScheduledTrainingNotification.objects.filter(training=training)


def inline_management(response):
    data = {}
    for inline in response.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        for name, value in management.initial.items():
            data[f"{management.prefix}-{name}"] = value
    return data


def times(start_at, end_at):
    return {
        "start_at_0": f"{start_at:%Y-%m-%d}",
        "start_at_1": f"{start_at:%H:%M:%S}",
        "end_at_0": f"{end_at:%Y-%m-%d}",
        "end_at_1": f"{end_at:%H:%M:%S}",
    }


def run_action(client, action, pks, **extra):
    data = {"action": action, helpers.ACTION_CHECKBOX_NAME: [str(pk) for pk in pks], **extra}
    return client.post(ROWS, data, follow=True)


def test_the_scheduled_rows_list_filters_by_kind_status_team_and_training_date(
    admin_client, training, frozen
):
    other = training_create(
        team=TeamFactory(), start_at=START + timedelta(days=3), end_at=END + timedelta(days=3)
    )

    def listed(query):
        response = admin_client.get(f"{ROWS}?{query}")
        assert response.status_code == 200
        return response.context["cl"].result_count

    assert listed("") == 40
    assert listed("kind=invitation") == 4
    assert listed("status__exact=pending&kind=post_questionnaire") == 24
    assert listed(f"training__team__id__exact={other.team_id}") == 18
    assert (
        listed(
            "training__start_at__gte=2026-12-04T00:00:00%2B00:00&training__start_at__lt=2026-12-05T00:00:00%2B00:00"
        )
        == 18
    )
    assert listed("q=Falcons") == 22
    # The start of the team's name, any case (an index serves it); not the players' names.
    assert listed("q=falc") == 22
    assert listed("q=alcons") == listed("q=player-") == 0


def test_a_training_page_shows_its_ladder_inline(admin_client, training):
    response = admin_client.get(f"{TRAININGS}{training.pk}/change/")

    assert response.status_code == 200
    (ladder, invitations, push_results) = response.context["inline_admin_formsets"]
    assert len(ladder.formset.forms) == 22
    assert len(invitations.formset.forms) == 3
    assert len(push_results.formset.forms) == 0  # the HTTP push backend's; none sent yet
    assert (
        b"pre_questionnaire" in response.content
        or b"Pre-training questionnaire" in response.content
    )


def test_adding_a_training_in_the_admin_schedules_its_ladder(admin_client, team, players, frozen):
    add = admin_client.get(f"{TRAININGS}add/")
    data = {
        "team": team.pk,
        "questionnaires_enabled": "on",
        **times(START, END),
        **inline_management(add),
    }

    response = admin_client.post(f"{TRAININGS}add/", data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    (training,) = Training.objects.all()
    assert rows(training).count() == 18


def test_moving_a_training_in_the_admin_moves_its_ladder(admin_client, training):
    url = f"{TRAININGS}{training.pk}/change/"
    page = admin_client.get(url)
    new_start = START + timedelta(hours=2)

    response = admin_client.post(
        url, {**times(new_start, END + timedelta(hours=2)), **inline_management(page)}
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    training.refresh_from_db()
    assert training.start_at == new_start
    for row in rows(training):
        anchor = training.end_at if row.kind == POST else training.start_at
        assert (row.due_at, row.version) == (anchor + row.offset, 2)


def test_an_end_before_the_start_is_refused_on_the_end_field(admin_client, training):
    url = f"{TRAININGS}{training.pk}/change/"
    page = admin_client.get(url)

    response = admin_client.post(
        url, {**times(START, START - timedelta(hours=1)), **inline_management(page)}
    )

    assert response.status_code == 200
    assert "end_at" in response.context["adminform"].form.errors
    assert rows(training).filter(version=2).count() == 0


@pytest.mark.parametrize(
    ("start_at", "field"),
    [
        (datetime(9999, 12, 31, 20, 0), "start_at"),
        (datetime(9000, 12, 31, 21, 30), "end_at"),
        (datetime(1970, 1, 2, 18, 0), "start_at"),
    ],
)
def test_moving_a_training_out_of_range_in_the_admin_is_a_form_error(
    admin_client, training, start_at, field
):
    url = f"{TRAININGS}{training.pk}/change/"
    page = admin_client.get(url)

    response = admin_client.post(
        url, {**times(start_at, start_at + timedelta(hours=1)), **inline_management(page)}
    )

    assert response.status_code == 200
    assert "1970 to 9000" in str(response.context["adminform"].form.errors[field])
    training.refresh_from_db()
    assert training.start_at == START
    assert set(rows(training).values_list("version", flat=True)) == {1}


def test_adding_a_training_at_the_end_of_time_in_the_admin_is_a_form_error(admin_client, team):
    add = admin_client.get(f"{TRAININGS}add/")
    data = {
        "team": team.pk,
        "questionnaires_enabled": "on",
        **times(datetime(9999, 12, 31, 20, 0), datetime(9999, 12, 31, 21, 0)),
        **inline_management(add),
    }

    response = admin_client.post(f"{TRAININGS}add/", data)

    assert response.status_code == 200
    assert "start_at" in response.context["adminform"].form.errors
    assert not Training.objects.exists()


@pytest.mark.parametrize("delta", ["P9999999999D", "-P36526D"])
def test_the_shift_action_refuses_more_than_100_years(admin_client, training, delta):
    row = rows(training).first()

    response = run_action(admin_client, "shift_rows", [row.pk], apply="1", delta=delta)

    assert "100 years" in str(response.context["form"].errors["delta"])
    row.refresh_from_db()
    assert row.version == 1


def test_the_cancel_trainings_action(admin_client, training):
    response = admin_client.post(
        TRAININGS,
        {"action": "cancel_trainings", helpers.ACTION_CHECKBOX_NAME: [str(training.pk)]},
        follow=True,
    )

    assert response.status_code == 200
    training.refresh_from_db()
    assert training.cancelled_at is not None
    assert not rows(training).pending().exists()


def test_the_cancel_action_on_rows(admin_client, training):
    invitations = rows(training).filter(kind=INVITATION)

    response = run_action(admin_client, "cancel_rows", invitations.values_list("pk", flat=True))

    assert response.status_code == 200
    assert set(invitations.values_list("status", flat=True)) == {Status.CANCELLED}
    assert rows(training).pending().count() == 18


def test_the_reschedule_action_asks_for_a_time_then_moves_the_rows(admin_client, training):
    row = rows(training).get(kind=PRE, offset=timedelta(minutes=-15))

    form = run_action(admin_client, "reschedule_rows", [row.pk])
    assert form.status_code == 200
    assert "due_at" in form.context["form"].fields
    done = run_action(
        admin_client, "reschedule_rows", [row.pk], apply="1", due_at="2026-12-01T17:50:00Z"
    )

    assert done.status_code == 200
    row.refresh_from_db()
    assert (row.due_at, row.version) == (datetime(2026, 12, 1, 17, 50, tzinfo=UTC), 2)


def test_the_shift_action_moves_rows_by_a_duration(admin_client, training):
    post = rows(training).filter(kind=POST)
    before = dict(post.values_list("pk", "due_at"))

    run_action(admin_client, "shift_rows", list(before), apply="1", delta="PT30M")

    after = dict(post.values_list("pk", "due_at"))
    assert all(after[pk] == due + timedelta(minutes=30) for pk, due in before.items())


def test_deliver_now_and_retry_actions(admin_client, training):
    row = rows(training).get(kind=PRE, offset=timedelta(minutes=-90))
    expired = rows(training).get(kind=PRE, offset=timedelta(minutes=-75))
    rows(training).filter(pk=expired.pk).update(status=Status.EXPIRED)

    run_action(admin_client, "deliver_now", [row.pk])
    run_action(admin_client, "retry_rows", [expired.pk])

    row.refresh_from_db()
    expired.refresh_from_db()
    assert row.version == 2
    assert expired.status == Status.PENDING


def test_sent_pushes_and_answers_are_listed(admin_client, training, players):
    PushNotification.objects.create(
        player=players[0], training=training, kind=PRE, title="Questionnaire", body="Please"
    )
    questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)

    pushes = admin_client.get("/admin/trainings/pushnotification/?kind=pre_questionnaire")
    answers = admin_client.get("/admin/trainings/questionnaireanswer/")

    assert pushes.status_code == answers.status_code == 200
    assert pushes.context["cl"].result_count == 1
    assert answers.context["cl"].result_count == 1
    assert admin_client.get("/admin/trainings/pushnotification/add/").status_code == 403


def test_a_handled_row_reads_handled_and_the_business_columns_come_first(admin_client, training):
    handled = rows(training).order_by("due_at").first()
    ScheduledTrainingNotification.objects.filter(pk=handled.pk).update(
        status=Status.DELIVERED, delivered_at=START, handled_at=START
    )

    page = admin_client.get(ROWS).content.decode()

    assert "Handled" in page
    assert "Delivered" not in page  # the status alone; the lifecycle word is "Handled"
    columns = [page.index(f"column-{name}") for name in ("kind", "when", "team", "state")]
    assert columns == sorted(columns)
    assert "min before" in page  # the offset read as a person says it, not "-1 day, 22:30"


def test_a_long_error_is_cut_in_the_list_and_whole_on_the_rows_page(admin_client, training):
    row = rows(training).first()
    error = "SMTPServerDisconnected: " + "x" * 300 + "\nTraceback line"
    ScheduledTrainingNotification.objects.filter(pk=row.pk).update(last_error=error)

    listing = admin_client.get(ROWS).content.decode()
    page = admin_client.get(f"{ROWS}{row.pk}/change/").content.decode()

    assert "x" * 300 not in listing
    assert "SMTPServerDisconnected: xxx" in listing
    assert "x" * 300 in page
