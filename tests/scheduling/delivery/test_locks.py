import time

import pytest
from django.test import override_settings

from scheduling.delivery.locks import LocalSweepLock, RedisSweepLock, sweep_lock
from scheduling.rows.databases import redis_client_for_locks
from tests.conftest import UNREACHABLE_REDIS_CACHE


@pytest.fixture(params=["redis", "local"])
def make_lock(request):
    if request.param == "redis":
        return lambda ttl: sweep_lock("test:lock", ttl)
    return lambda ttl: LocalSweepLock("test:lock", ttl)


def test_only_one_holder_at_a_time(make_lock):
    first, second = make_lock(5), make_lock(5)

    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()
    second.release()


def test_release_does_not_delete_another_holders_lock(make_lock):
    first, second = make_lock(0.2), make_lock(5)
    assert first.acquire()
    time.sleep(0.3)  # first's TTL ran out
    assert second.acquire()

    first.release()  # compare-and-delete: not first's token any more

    assert not make_lock(5).acquire()
    assert not first.extend()
    second.release()


def test_extend_keeps_the_lock_past_its_first_ttl(make_lock):
    holder = make_lock(0.3)
    assert holder.acquire()
    time.sleep(0.2)
    assert holder.extend()
    time.sleep(0.2)

    assert not make_lock(5).acquire()
    holder.release()


@override_settings(CACHES=UNREACHABLE_REDIS_CACHE)
def test_an_unreachable_lock_store_lets_the_sweep_go_ahead_without_the_lock():
    from django_redis import pool

    pool.ConnectionFactory._pools.clear()
    lock = sweep_lock("test:lock", 5)
    assert isinstance(lock, RedisSweepLock)

    assert lock.acquire()
    assert lock.degraded
    assert lock.extend()
    lock.release()


def test_a_lazy_extension_soon_after_the_last_needs_no_round_trip_but_a_later_one_asks():
    """Within a quarter of its TTL of the last acquire or extension the key cannot have
    expired: a holding sweep's extension at each wake costs nothing. Past that, or at a
    batch's extension (never lazy), a lost key (here deleted, as a store's failure would lose
    it) is seen."""
    holder = sweep_lock("test:lock:fresh", 0.4)
    assert holder.acquire()
    redis_client_for_locks().delete("test:lock:fresh")

    assert holder.extend(lazily=True)  # within 0.1 s of the acquire: not asked
    assert not holder.extend()  # a batch's: asked
    time.sleep(0.15)
    assert not holder.extend(lazily=True)
