import os
import time

from django.tasks import task


@task
def greet(name: str) -> str:
    with open(os.environ["SHOP_EFFECTS_FILE"], "a") as effects:
        effects.write(f"greet {name} {time.time()}\n")
    return f"hello {name}"


@task
def flaky() -> None:
    raise RuntimeError("the mail server is down")
