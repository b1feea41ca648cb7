"""The bench's CPU of a process tree, read from /proc (bench/cpu.py)."""

import os

from bench.cpu import Proc, descendants, process_table, tree_cpu


def test_descendants_are_children_and_their_children_only():
    parents = {10: 1, 11: 10, 12: 10, 13: 11, 20: 1, 21: 20}
    assert descendants(parents, 10) == {11, 12, 13}
    assert descendants(parents, 13) == set()
    assert descendants(parents, 99) == set()


def test_a_trees_cpu_adds_its_processes_and_leaves_the_rest_out():
    table = {10: Proc(1, 1.5), 11: Proc(10, 0.25), 13: Proc(11, 0.125), 20: Proc(1, 8.0)}
    assert tree_cpu(table, 10) == 1.75 + 0.125
    assert tree_cpu(table, 11) == 0.375
    assert tree_cpu(table, 42) == 0.0  # exited: nothing to read


def test_this_process_is_read_with_the_cpu_it_has_spent():
    sum(i * i for i in range(300_000))  # some CPU to read
    times = os.times()
    spent = times.user + times.system + times.children_user + times.children_system
    table = process_table()
    assert table[os.getpid()].parent == os.getppid()
    assert tree_cpu(table, os.getpid()) >= spent - 0.02  # ticks of 10 ms, read later
