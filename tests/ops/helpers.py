"""Reading /metrics as Prometheus does: its own parser, then one value per (sample, model)."""

from typing import Any

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

PING = "testapp.scheduledping"
TOKEN = "s3cret-scrape-token"


def scrape(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} from a real GET /metrics."""
    response = client.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict[Any, float], name: str, model: str = PING, **labels: str) -> float:
    return samples[name, tuple(sorted({"model": model, **labels}.items()))]
