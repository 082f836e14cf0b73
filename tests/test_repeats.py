"""The repeat policy: how many repeats a cell gets and how much work one covers (no server)."""
import itertools

from storebench.core.repeats import Cell, RepeatPolicy, rounds


def test_a_steady_cell_stops_at_the_minimum_and_meets_the_target():
    cells = rounds(["a"], RepeatPolicy(min_repeats=5), lambda point, repeat, cell: (1.0, {"repeat": repeat}))
    assert cells[0].repeats == 5
    assert cells[0].annotated_rows(RepeatPolicy())[0] | {"repeat": 0} == {
        "repeat": 0, "repeats": 5, "ci_target_met": True, "passes": 1}


def test_a_noisy_cell_takes_more_repeats_until_its_cap_and_says_the_target_was_missed():
    noise = itertools.cycle([0.5, 1.5])
    policy = RepeatPolicy(min_repeats=5, max_repeats=9, cell_cap_s=1e9)
    (cell,) = rounds(["a"], policy, lambda point, repeat, cell: (next(noise), None))
    assert cell.repeats == 9
    assert not cell.fields(policy)["ci_target_met"]


def test_rounds_are_repeat_major_over_the_cells_still_open():
    order = []
    noisy = itertools.cycle([0.5, 1.5])

    def measure(point, repeat, cell):
        order.append((repeat, point))
        return (next(noisy) if point == "noisy" else 1.0), None

    rounds(["steady", "noisy"], RepeatPolicy(min_repeats=2, max_repeats=4), measure)
    assert order == [(0, "steady"), (0, "noisy"), (1, "steady"), (1, "noisy"), (2, "noisy"), (3, "noisy")]


def test_short_passes_are_looped_to_cover_the_timed_work_but_cold_passes_never_are():
    policy = RepeatPolicy(min_repeat_s=1.0)
    assert policy.passes_for(0.002) == 500
    assert policy.passes_for(3.0) == 1
    assert policy.passes_for(0.002, loopable=False) == 1


def test_a_cell_records_its_passes():
    policy = RepeatPolicy.exactly(3)
    cell = Cell(passes=7)
    (done,) = rounds(["a"], policy, lambda p, r, c: (2.0, {"r": r}), [cell])
    assert [row["passes"] for row in done.annotated_rows(policy)] == [7, 7, 7]
