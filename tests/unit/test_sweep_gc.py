"""Batches pause Python's cyclic garbage collector; overlapping batches share one pause, and a
process that turned the collector off itself keeps it off."""

import gc

from scheduling.delivery.sweep.batch import CyclicGcPause


def test_the_collector_is_back_after_the_last_of_overlapping_batches():
    pause = CyclicGcPause()
    assert gc.isenabled()

    with pause.paused():
        with pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()

    assert gc.isenabled()


def test_a_collector_the_process_turned_off_stays_off():
    pause = CyclicGcPause()
    gc.disable()
    try:
        with pause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_in_a_batch_still_brings_the_collector_back():
    pause = CyclicGcPause()
    try:
        with pause.paused():
            raise RuntimeError("the batch failed")
    except RuntimeError:
        pass

    assert gc.isenabled()
