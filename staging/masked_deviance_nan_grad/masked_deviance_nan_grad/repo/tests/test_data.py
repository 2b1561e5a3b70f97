import torch

from countcast.config import compose, preset
from countcast.data.table import Table
from countcast.evaluation.metrics import interval_coverage, poisson_quantile
from countcast.data.schema import TARGET
from countcast.training.ensemble import prepare_data


def test_export_has_no_zero_rows_and_split_is_disjoint():
    cfg = compose(preset("smoke"))
    train, holdout, cards, scaler = prepare_data(cfg)
    assert float(train[TARGET].min()) >= 1
    assert len(train) + len(holdout) > 0
    assert abs(float(train["temp"].mean())) < 1e-4


def test_csv_roundtrip(tmp_path):
    t = Table({"store": torch.tensor([0, 1, 2]), "units": torch.tensor([1.0, 2.5, 7.0])})
    back = Table.from_csv(t.to_csv(tmp_path / "t.csv"), integer=["store"])
    assert back["store"].tolist() == [0, 1, 2]
    assert torch.allclose(back["units"], t["units"])


def test_poisson_quantiles():
    mu = torch.tensor([0.5, 4.0, 30.0])
    med = poisson_quantile(mu, 0.5)
    assert med.tolist() == [0.0, 4.0, 30.0]
    y = torch.poisson(torch.full((4000,), 6.0), generator=torch.Generator().manual_seed(0))
    assert 0.75 < interval_coverage(y, torch.full((4000,), 6.0), 0.8) < 0.95
