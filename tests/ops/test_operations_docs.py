"""The ops kit names only metrics a real /metrics scrape has."""

import json
import re
from pathlib import Path

import pytest
import yaml

from scheduling.delivery.sweep.run import sweep
from tests.ops.helpers import TOKEN, scrape
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[2] / "docs"
NAME = re.compile(r"\bscheduling_[a-z0-9_]+\b")
ALERTS = {
    "SchedulingBacklogGrowing",
    "SchedulingLatenessHigh",
    "SchedulingFailedRows",
    "SchedulingSweeperSilent",
}


def yaml_blocks() -> list[dict]:
    text = (DOCS / "operations.md").read_text()
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def alert_rules() -> list[dict]:
    (rules,) = [block for block in yaml_blocks() if "groups" in block]
    return [rule for group in rules["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    targets = [target for panel in dashboard["panels"] for target in panel["targets"]]
    return [target["expr"] for target in targets]


@pytest.fixture
def scraped_names(client, settings) -> set[str]:
    settings.SCHEDULING_METRICS_TOKEN = TOKEN
    sweep(ScheduledPing)  # so that the last-sweep gauge has a sample
    return {name for name, _ in scrape(client)}


def test_the_alert_rules_cover_what_operators_must_hear_about():
    assert {rule["alert"] for rule in alert_rules()} >= ALERTS


def test_the_alert_rules_use_only_metrics_the_endpoint_serves(scraped_names):
    used = {name for rule in alert_rules() for name in NAME.findall(rule["expr"])}
    assert used, "no scheduling_* metric found in the rules"
    assert used <= scraped_names, used - scraped_names


def test_the_grafana_dashboard_uses_only_metrics_the_endpoint_serves(scraped_names):
    used = {name for expr in dashboard_expressions() for name in NAME.findall(expr)}
    assert len(used) >= 10
    assert used <= scraped_names, used - scraped_names


def test_the_scrape_configuration_sends_the_bearer_token():
    (config,) = [block for block in yaml_blocks() if "scrape_configs" in block]
    (job,) = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["authorization"]["type"] == "Bearer"
