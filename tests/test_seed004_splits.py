"""Seed 004's split creation (storebench.data.splits): properties over seeded random tables (no server)."""
import uuid

import numpy as np
import pandas as pd
import pytest

from storebench.data import splits as sp


def random_table(seed: int) -> pd.DataFrame:
    """Groups of 1-19 rows, single-class or mixed-class, over 2-3 classes."""
    rng = np.random.default_rng(seed)
    n_classes, rows = int(rng.integers(2, 4)), []
    for g in range(int(rng.integers(5, 150))):
        mixed = rng.random() < 0.5
        for _ in range(int(rng.integers(1, 20))):
            rows.append((uuid.UUID(bytes=rng.bytes(16)), g, int(rng.integers(n_classes)) if mixed else g % n_classes))
    return pd.DataFrame(rows, columns=["id", "grp", "cls"])


def ratios_for(seed):
    rng = np.random.default_rng(seed + 10_000)
    return rng.integers(1, 8, int(rng.integers(1, 5))).astype(float)


def make(table, ratios, seed, **kw):
    return sp.make_splits(sp.FrameMetadata(table, "test table"), ratios, group_by=["grp"], label="cls", seed=seed, **kw)


@pytest.mark.parametrize("seed", range(60))
def test_groups_never_span_splits_and_ratios_hold(seed):
    table = random_table(seed)
    ratios = ratios_for(seed)
    splits = make(table, ratios, seed)
    group_of = dict(zip(table["id"], table["grp"]))
    seen = [u for ids in splits.ids for u in ids]
    assert len(seen) == len(set(seen)) and set(seen) <= set(group_of)
    owners = {}
    for s, ids in enumerate(splits.ids):
        for u in ids:
            assert owners.setdefault(group_of[u], s) == s, "a group is in two splits"
    n, largest = sum(splits.sizes()), table.groupby("grp").size().max()
    assert n == len(table)  # no balance, no cap: every row is used
    share = np.array(splits.sizes()) / n
    assert np.abs(share - ratios / ratios.sum()).max() <= largest / n


@pytest.mark.parametrize("seed", range(40))
def test_class_balance_within_half_a_row(seed):
    table = random_table(seed)
    n_classes = table["cls"].nunique()
    balance = np.random.default_rng(seed).integers(1, 4, n_classes).astype(float)
    splits = make(table, ratios_for(seed), seed, balance=balance)
    stats = sp.split_stats(splits, table).reindex(columns=sorted(table["cls"].unique()), fill_value=0)
    for _, counts in stats.iterrows():
        target = counts.sum() * balance / balance.sum()
        assert np.abs(counts.to_numpy() - target).max() <= 0.5 + 1e-9


def test_same_seed_same_splits_whatever_order_the_table_returns():
    table = random_table(7)
    a = make(table, [7, 2, 1], seed=3)
    b = make(table.sample(frac=1, random_state=1), [7, 2, 1], seed=3)
    assert a.ids == b.ids
    assert make(table, [7, 2, 1], seed=4).ids != a.ids


def test_max_samples_caps_the_total_and_rows_come_round_robin_across_groups():
    table = random_table(3)
    splits = make(table, [1], seed=0, max_samples=len(table) // 4)
    assert sum(splits.sizes()) == pytest.approx(len(table) // 4, abs=2)
    used = table.set_index("id").loc[splits.ids[0], "grp"]
    # round robin: no group gives a second row before every group with rows of that class gave one
    assert used.value_counts().max() - used.value_counts().min() <= 1 or used.nunique() == table["grp"].nunique()


def test_epochs_reshuffle_the_same_way_on_every_rank(tmp_path):
    table = random_table(5)
    splits = make(table, [3, 1], seed=9)
    again = sp.Splits.load(splits.save(tmp_path / "s.json"))
    assert again.epoch(0, 0) == splits.ids[0]
    assert again.epoch(0, 1) == splits.epoch(0, 1) != splits.epoch(0, 2)
    assert sorted(again.epoch(0, 1)) == sorted(splits.ids[0])


def test_a_split_file_of_another_table_is_rejected(tmp_path):
    table = random_table(11)
    path = make(table, [7, 3], seed=0).save(tmp_path / "s.json")
    assert sp.Splits.load(path, sp.FrameMetadata(table)).sizes()  # the same table: accepted
    changed = sp.FrameMetadata(table.iloc[5:], "the changed table")
    with pytest.raises(sp.SplitMismatch, match=r"made from test table .* but the changed table has .* of the split's"):
        sp.Splits.load(path, changed)
    (tmp_path / "other.json").write_text('{"header": {}, "splits": []}')
    with pytest.raises(sp.SplitMismatch, match="not a storebench split file"):
        sp.Splits.load(tmp_path / "other.json")
