"""The load the `create` scenario puts on gunicorn: `python -m locust -f bench/locustfile.py
--headless ... PurchaseUser` (or PlainPurchaseUser). bench/create.py runs it; the data it posts
(token, release, customer ids) comes through the environment."""

import itertools
import os

from locust import FastHttpUser, constant, task

TOKEN = os.environ.get("BENCH_TOKEN", "")
RELEASE = int(os.environ.get("BENCH_RELEASE", "0"))
FIRST, LAST = (int(n) for n in os.environ.get("BENCH_CUSTOMERS", "0-0").split("-"))
# Each user process walks the customers in turn; a customer may buy a release more than once.
CUSTOMERS = itertools.cycle(range(FIRST, LAST + 1))


class SaleUser(FastHttpUser):
    abstract = True
    wait_time = constant(0)  # closed loop: each user posts again as soon as it has its answer
    path = ""

    @task
    def sell(self) -> None:
        self.client.post(
            self.path,
            json={"customer": next(CUSTOMERS), "release": RELEASE},
            headers={"Authorization": f"Token {TOKEN}"},
        )


class PurchaseUser(SaleUser):
    """POST /api/purchases/: the purchase, its share-locked release, its scheduled rows."""

    path = "/api/purchases/"


class PlainPurchaseUser(SaleUser):
    """A stock DRF create of the same fields with no scheduling (bench/plain_api)."""

    path = "/bench/plain-purchases/"
