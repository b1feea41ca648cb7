"""Who may call what: every API operation and every admin bulk action, for five roles.

The API operations come from the OpenAPI schema and the other routes from the URL resolver,
so a new endpoint fails this test until its expected permission is written down here.
"""

import re
from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Group, Permission, User
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scheduling.recurring.models import RecurringSchedule
from scheduling.rows.models import ScheduledEvent
from tests.factories import ScheduledPingFactory
from tests.remoteapp.models import Account as RemoteAccount
from tests.remoteapp.models import ScheduledReminder
from tests.security.world import World
from tests.testapp.models import ScheduledNotice, ScheduledOnce, ScheduledPing
from trainings.kinds import Phase
from trainings.models import Player, PushNotification, Training
from trainings.services import questionnaire_answer

ROLES = ("anonymous", "none", "view", "change", "superuser")
PUBLIC = "public"
SIGNED_IN = "signed in"

# Resource (first segment after /api/) -> the model whose permissions guard it.
MODELS = {
    "accounts": "purchases.account",
    "artists": "purchases.artist",
    "releases": "purchases.release",
    "customers": "purchases.customer",
    "purchases": "purchases.purchase",
    "scheduled-purchases": "purchases.scheduledpurchase",
    "downloads": "purchases.purchase",
    "teams": "trainings.team",
    "players": "trainings.player",
    "trainings": "trainings.training",
    "invitations": "trainings.invitation",
    "scheduled-training-notifications": "trainings.scheduledtrainingnotification",
    "jobs": "scheduling_jobs.job",
    "schedules": "scheduling_recurring.recurringschedule",
    "calendars": "scheduling.calendar",
    "pauses": "scheduling.deliverypause",
}
CRUD = {"GET": ["view"], "POST": ["add"], "PUT": ["change"], "PATCH": ["change"]}
CRUD["DELETE"] = ["delete"]

# Operations whose rule is not the method's CRUD permission on the resource's model.
SPECIAL: dict[tuple[str, str], Any] = {
    ("GET", "/api/downloads/{token}/"): PUBLIC,  # the signed token is the credential
    ("POST", "/api/auth/token/"): PUBLIC,  # the password is the credential
    ("PUT", "/api/jobs/{key}/"): ["add", "change"],  # creates or replaces
    ("POST", "/api/jobs/"): ["add", "change"],  # creates or replaces, the key in the body
    ("POST", "/api/jobs/cancel/"): ["change"],
    ("POST", "/api/jobs/reschedule/"): ["change"],
    ("POST", "/api/scheduled-purchases/cancel/"): ["change"],
    ("POST", "/api/scheduled-purchases/reschedule/"): ["change"],
    ("POST", "/api/scheduled-purchases/retry/"): ["change"],
    ("POST", "/api/scheduled-training-notifications/cancel/"): ["change"],
    ("POST", "/api/scheduled-training-notifications/reschedule/"): ["change"],
    ("POST", "/api/scheduled-training-notifications/retry/"): ["change"],
    ("POST", "/api/purchases/{id}/refund/"): ["change"],
    ("POST", "/api/schedules/{name}/trigger/"): ["change"],
    ("GET", "/api/schedules/{name}/dst/"): ["view"],
    # Occurrences are occurrences, whichever way they are listed (DATA_RULES below).
    ("GET", "/api/schedules/{name}/occurrences/"): [
        "view",
        "scheduling_recurring.view_scheduledoccurrence",
    ],
    ("POST", "/api/trainings/{id}/cancel/"): ["change"],
    ("POST", "/api/trainings/{id}/answers/"): ["trainings.add_questionnaireanswer"],
    # Pausing delivery is a permission of its own, whatever the method (and staff only).
    ("GET", "/api/pauses/"): ["scheduling.pause_delivery"],
    ("POST", "/api/pauses/"): ["scheduling.pause_delivery"],
    ("GET", "/api/pauses/{model}/"): ["scheduling.pause_delivery"],
    ("DELETE", "/api/pauses/{model}/"): ["scheduling.pause_delivery"],
}
# Routes outside the OpenAPI schema (admin is covered by its own matrix below).
OTHER_ROUTES: dict[tuple[str, str], Any] = {
    ("GET", "/healthz"): PUBLIC,  # load balancers probe it without credentials
    ("GET", "/metrics"): {"staff"},  # a staff session (or the bearer token): superusers
    ("GET", "/api/schema/"): SIGNED_IN,
    ("GET", "/api/docs/"): SIGNED_IN,  # anonymous: 401, a page saying how to sign in
    ("GET", "/api/redoc/"): SIGNED_IN,
    ("GET", "/api/"): SIGNED_IN,  # the index of every resource
}


def schema_operations() -> list[tuple[str, str]]:
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    methods = ("get", "post", "put", "patch", "delete")
    return sorted((m.upper(), p) for p, ops in paths.items() for m in ops if m in methods)


def routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    found = []
    for pattern in resolver.url_patterns:
        text = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found += routes(pattern, text)
        elif isinstance(pattern, URLPattern):
            found.append(text)
    return found


def model_of(path: str) -> str | None:
    """The model whose permissions guard a path: /api/events/<app>/<model>/ names its own."""
    parts = path.split("/")
    if len(parts) > 4 and parts[:3] == ["", "api", "events"]:
        return f"{parts[3]}.{parts[4]}"
    return MODELS.get(parts[2]) if path.startswith("/api/") else None


BULK_ACTIONS = ("/cancel/", "/reschedule/", "/retry/")


def needed(method: str, path: str) -> Any:
    if (method, path) in OTHER_ROUTES:
        return OTHER_ROUTES[method, path]
    generic_bulk = path.startswith("/api/events/") and path.endswith(BULK_ACTIONS)
    rule = ["change"] if generic_bulk else SPECIAL.get((method, path), CRUD[method])
    if rule in (PUBLIC, SIGNED_IN):
        return rule
    model = model_of(path)
    assert model is not None, f"no model guards {path}"
    app = model.split(".")[0]
    return {p if "." in p else f"{app}.{p}_{model.split('.')[1]}" for p in rule}


OPERATIONS = [*schema_operations(), *OTHER_ROUTES]


def test_every_route_has_an_expectation():
    """A route the resolver knows but neither the schema nor OTHER_ROUTES lists fails here."""
    schema_paths = {path for _, path in OPERATIONS}
    unlisted = []
    for route in routes(get_resolver()):
        if route.startswith("admin/") or "format" in route:
            continue  # the admin has its own matrix; DRF's .json/.api suffix variants
        concrete = "/" + re.sub(r"\^|\$|\\Z", "", route)
        if not any(matches(concrete, path) for path in schema_paths):
            unlisted.append(route)
    assert not unlisted, f"routes with no expected permission: {unlisted}"
    assert all(needed(method, path) for method, path in OPERATIONS)


def matches(route: str, path: str) -> bool:
    """A resolver route (regex or path converter syntax) against a schema path template."""
    template = re.sub(r"\{[^}]+\}", "X", path)
    route = re.sub(r"\(\?P<[^>]+>[^)]*\)|<[^>]+>", "X", route)
    return route.rstrip("/") == template.rstrip("/")


# --- API -------------------------------------------------------------------------------------


def user_for(role: str, model: str | None) -> User | None:
    if role == "anonymous":
        return None
    if role == "superuser":
        return User.objects.create_superuser(f"su-{User.objects.count()}", "", "pw")
    user = User.objects.create_user(f"{role}-{User.objects.count()}", password="pw")
    codenames = {"none": [], "view": ["view"], "change": ["view", "change"]}[role]
    if model:
        app, name = model.split(".")
        user.user_permissions.set(
            Permission.objects.filter(
                content_type__app_label=app, codename__in=[f"{c}_{name}" for c in codenames]
            )
        )
    return user


def granted(role: str, model: str | None) -> set[str]:
    if model is None:
        return set()
    app, name = model.split(".")
    codenames = {"none": [], "view": ["view"], "change": ["view", "change"]}[role]
    return {f"{app}.{codename}_{name}" for codename in codenames}


def allowed(rule: Any, role: str, model: str | None) -> bool:
    if rule == PUBLIC:
        return True
    if role == "anonymous":
        return False
    if rule == SIGNED_IN or role == "superuser":
        return True
    return bool(rule <= granted(role, model))


def concrete_path(path: str, world: World) -> str:
    resource = path.split("/")[2] if path.startswith("/api/") else ""
    # No row: an id no row has ("0": ids route as ASCII digits only), or a key none has.
    missing = "0" if "{id}" in path else "x"
    value = world.download_token if "{token}" in path else world.path_value(resource) or missing
    for name in ("{id}", "{key}", "{name}", "{token}", "{model}"):
        path = path.replace(name, value)
    return path


def call(client: APIClient, method: str, path: str) -> Any:
    return getattr(client, method.lower())(path, {}, format="json")


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_the_api_matrix(world, settings, method, path):
    settings.SCHEDULING_BULK_THROTTLE_RATE = "1000/min"
    rule = needed(method, path)
    model = model_of(path)
    outcomes = {}
    for role in ROLES:
        client = APIClient()
        user = user_for(role, model)
        if user is not None:
            client.force_authenticate(user)
        status = call(client, method, concrete_path(path, world)).status_code
        assert status < 500, (role, status)
        outcomes[role] = status not in (401, 403)
    expected = {role: allowed(rule, role, model) for role in ROLES}
    assert outcomes == expected


# --- admin bulk actions ------------------------------------------------------------------------


def admin_actions() -> list[tuple[str, str]]:
    """(model label, action name) for every action of every registered ModelAdmin."""
    found = []
    for model, model_admin in admin.site._registry.items():
        names = [name for _, name, _ in model_admin._get_base_actions()]  # type: ignore[attr-defined]
        found += [(model._meta.label_lower, name) for name in names]
    return sorted(found)


ADMIN_ACTIONS = admin_actions()
# The permission each action declares; delete_selected is Django's own. django-axes' cleanup
# (project/admin.py) deletes rows too.
ADMIN_ACTION_NEEDS = {"delete_selected": "delete", "cleanup_expired_attempts": "delete"}


def ping_due_at() -> Any:
    return timezone.now() + timedelta(hours=1)


def seed_admin_rows(world: World) -> None:
    """A row for the admin models the API world does not create."""
    training = Training.objects.get(pk=world.ids["trainings"])
    player = Player.objects.get(pk=world.ids["players"])
    questionnaire_answer(training=training, player=player, phase=Phase.values[0])
    PushNotification.objects.create(
        player=player, training=training, kind="questionnaire", title="t", body="b"
    )
    Group.objects.create(name="editors")
    Token.objects.create(user=User.objects.create_user("token-owner", password="pw"))
    # Registered by the framework's default admin (the test app writes no admin module).
    row: ScheduledPing = ScheduledPingFactory()  # type: ignore[assignment]
    ScheduledNotice.objects.create(ping_id=row.ping_id, due_at=ping_due_at())
    ScheduledOnce.objects.create(ping_id=row.ping_id, due_at=ping_due_at())
    remote = RemoteAccount.objects.create(name="remote")  # on its own database ("second")
    ScheduledReminder.objects.create(account=remote, due_at=ping_due_at())
    # django-axes' records of sign-ins (its admin lists them; a lockout is lifted there).
    sign_in = {"username": "ann", "ip_address": "192.0.2.1", "user_agent": "ua"}
    AccessAttempt.objects.create(**sign_in, failures_since_start=1, attempt_time=timezone.now())
    AccessLog.objects.create(**sign_in, attempt_time=timezone.now())
    AccessFailureLog.objects.create(**sign_in, attempt_time=timezone.now())


def staff_for(role: str, model: str) -> Client:
    client = Client()
    user = user_for(role, model)
    if user is not None:
        user.is_staff = True
        user.save()
        client.force_login(user)
    return client


def admin_outcome(response: Any) -> str:
    if response.status_code == 302 and "/login/" in response["Location"]:
        return "login"
    if response.status_code == 403:
        return "forbidden"
    if response.status_code == 200 and any(
        (template.name or "").endswith("change_list.html") for template in response.templates
    ):
        return "refused"  # the action is not offered to this user: the list, unchanged
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    if any("No action selected" in t or "Items must be selected" in t for t in texts):
        return "refused"
    assert response.status_code in (200, 302), response.status_code
    return "ran"


def expected_admin(role: str, action: str) -> str:
    needs = ADMIN_ACTION_NEEDS.get(action, "change")
    return {
        "anonymous": "login",
        "none": "forbidden",
        "view": "refused",
        "change": "ran" if needs == "change" else "refused",
        "superuser": "ran",
    }[role]


def test_every_admin_action_is_found():
    assert len(ADMIN_ACTIONS) >= 20, ADMIN_ACTIONS


@pytest.mark.parametrize(
    ("model", "action"), ADMIN_ACTIONS, ids=[f"{m}:{a}" for m, a in ADMIN_ACTIONS]
)
def test_the_admin_action_matrix(world, model, action):
    seed_admin_rows(world)
    model_class = next(m for m in admin.site._registry if m._meta.label_lower == model)
    pk = model_class._default_manager.order_by("pk").values_list("pk", flat=True).first()
    assert pk is not None, f"no {model} row to select"
    url = f"/admin/{model.replace('.', '/')}/"
    outcomes = {}
    for role in ROLES:
        response = staff_for(role, model).post(url, {"action": action, ACTION_CHECKBOX_NAME: [pk]})
        outcomes[role] = admin_outcome(response)
    expected = {role: expected_admin(role, action) for role in ROLES}
    if model == "authtoken.tokenproxy":
        # DRF's token admin lists tokens by user id but its queryset filters the key column,
        # so no selection ever matches: nobody can bulk-delete tokens there (fail safe).
        expected["superuser"] = "refused"
    assert outcomes == expected


# --- admin pages outside the ModelAdmins ------------------------------------------------------

# The site's own pages, Django's rules: index, login and the rest need a staff user.
DJANGO_ADMIN_PAGES = {
    "index",
    "login",
    "logout",
    "password_change",
    "password_change_done",
    "autocomplete",
    "jsi18n",
    "view_on_site",
    "app_list",
}
# Pages added to the site: name -> its rule.
ADMIN_PAGES = {
    "scheduling_attention": "staff; lists only the scheduled models the user may view",
    # tests/scheduling/ops checks these with the same roles as the attention page.
    "scheduling_dashboard": "staff; shows only the scheduled models the user may view",
    "scheduling_dashboard_data": "staff; the dashboard's figures, same models as the page",
    "scheduling_dashboard_chart": "staff; Chart.js, when the host does not serve it as a static file",
    # tests/ops/test_pause_admin.py checks it: 403 without the permission.
    "scheduling_pause": "staff with scheduling.pause_delivery; POST only",
}


def test_every_admin_page_has_an_expectation():
    """A page added to the admin site (not a ModelAdmin's) fails here until its rule is written."""
    names = {
        pattern.name
        for pattern in admin.site.get_urls()
        if isinstance(pattern, URLPattern) and pattern.name
    }
    assert names - DJANGO_ADMIN_PAGES == set(ADMIN_PAGES)


def test_the_attention_page_matrix(world):
    seed_admin_rows(world)
    scheduled = {
        model._meta.label_lower
        for model in admin.site._registry
        if issubclass(model, ScheduledEvent)
    }
    outcomes = {}
    for role in ROLES:
        response = staff_for(role, "testapp.scheduledping").get("/admin/scheduling/attention/")
        if response.status_code == 302:
            outcomes[role] = "login" if "/login/" in response["Location"] else response["Location"]
        else:
            assert response.status_code == 200, (role, response.status_code)
            outcomes[role] = {group.model for group in response.context["groups"]}
    assert outcomes == {
        "anonymous": "login",
        "none": set(),
        "view": {"testapp.scheduledping"},
        "change": {"testapp.scheduledping"},
        "superuser": scheduled,
    }


# --- One rule per piece of data ----------------------------------------------------------------
# Data that two ways reach follows one rule, whichever way asks. Decided in issue #37:
DATA_RULES = {
    "a customer's email or name": (
        "purchases.view_customer, wherever it is shown or searched: the customers' admin, the "
        "columns, fields and search of the purchases' and scheduled purchases' admin, and the "
        "API's ?customer_email= filter (403 without it: a match would tell that an email "
        "bought something). A purchase reads '#12 Album'; a release's page lists purchase "
        "numbers, not customers."
    ),
    "a schedule's occurrences": (
        "scheduling_recurring.view_scheduledoccurrence, at /api/schedules/{name}/occurrences/ "
        "(with view_recurringschedule, as the schedule is named) as at the occurrences' own "
        "endpoint."
    ),
    "a model's figures in /metrics": (
        "a staff session sees the samples of the models it may view (view_<model>); superusers "
        "and the bearer token (SCHEDULING_METRICS_TOKEN) see every model."
    ),
    "another object named in an error": (
        "named only to a user who may view its kind, else counted ('1 schedule you cannot "
        "view'); an object's own values (a schedule's cron) never appear in another object's "
        "refusal."
    ),
}


def staff_with(name: str, *permissions: str) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    for permission in permissions:
        app_label, codename = permission.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return User.objects.get(pk=user.pk)  # no cached permissions


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_every_data_rule_is_written_down():
    assert all(rule.strip() for rule in DATA_RULES.values())


def test_a_customers_email_needs_the_permission_to_view_customers(world):
    clerk = staff_with("clerk", "purchases.view_scheduledpurchase", "purchases.view_purchase")
    both = staff_with("support", "purchases.view_scheduledpurchase", "purchases.view_customer")
    admin_page = "/admin/purchases/scheduledpurchase/"
    email = "fan@example.com"

    for page in (admin_page, "/admin/purchases/purchase/"):
        assert email not in signed_in(clerk).get(page).content.decode(), page
    searched = signed_in(clerk).get(admin_page, {"q": email}).content.decode()
    assert email not in searched  # every searched field is the customer's: no search at all
    found = signed_in(both).get(admin_page, {"q": email}).content.decode()
    assert email in found.replace(f'value="{email}"', "")  # in the row's column
    api = "/api/scheduled-purchases/"
    assert client_as(clerk).get(api, {"customer_email": email}).status_code == 403
    assert client_as(clerk).get(api, {"customer_email": "nobody@example.com"}).status_code == 403
    answer = client_as(both).get(api, {"customer_email": email})
    assert (answer.status_code, answer.json()["count"]) == (200, 1)


def client_as(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_schedules_occurrences_need_the_permission_to_view_occurrences(world):
    schedules = staff_with("planner", "scheduling_recurring.view_recurringschedule")
    both = staff_with(
        "auditor",
        "scheduling_recurring.view_recurringschedule",
        "scheduling_recurring.view_scheduledoccurrence",
    )
    path = f"/api/schedules/{world.ids['schedules']}/occurrences/"

    assert client_as(schedules).get(path).status_code == 403
    assert client_as(both).get(path).status_code == 200


def test_metrics_show_a_staff_user_the_models_they_may_view(world):
    purchases_staff = staff_with("store", "purchases.view_scheduledpurchase")

    text = signed_in(purchases_staff).get("/metrics").content.decode()
    everything = signed_in(User.objects.create_superuser("root2", "", "pw")).get("/metrics")

    assert 'model="purchases.scheduledpurchase"' in text
    assert 'model="trainings.scheduledtrainingnotification"' not in text
    assert 'model="trainings.scheduledtrainingnotification"' in everything.content.decode()
    assert "# TYPE scheduling_due_rows gauge" in text  # the families stay, without samples


def test_a_calendars_refusals_name_only_what_the_user_may_view(world):
    secret = RecurringSchedule(
        name="secret-report", cron="17 4 * * *", queue="q", calendars=["weekends"]
    )
    secret.save()
    editor = staff_with(
        "editor",
        "scheduling.view_calendar",
        "scheduling.change_calendar",
        "scheduling.delete_calendar",
    )
    api = client_as(editor)

    deleted = api.delete("/api/calendars/weekends/")
    every_day = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
    patched = api.patch("/api/calendars/weekends/", {"weekdays": every_day}, format="json")

    assert deleted.status_code == 400
    assert "secret-report" not in deleted.content.decode()
    assert "1 schedule you cannot view" in deleted.content.decode()
    assert "calendar office" in deleted.content.decode()  # calendars: the editor views them
    assert patched.status_code == 400, patched.content
    assert list(patched.json()) == ["calendar"]
    assert "17 4" not in patched.content.decode()
    assert "secret-report" not in patched.content.decode()
    viewer = staff_with(
        "viewer", "scheduling.delete_calendar", "scheduling_recurring.view_recurringschedule"
    )
    assert "secret-report" in client_as(viewer).delete("/api/calendars/weekends/").content.decode()
