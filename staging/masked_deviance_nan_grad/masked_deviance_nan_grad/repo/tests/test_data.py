from countcast.config import compose, preset
from countcast.data.schema import TARGET
from countcast.training.ensemble import prepare_data


def test_export_has_no_zero_rows_and_split_is_disjoint():
    cfg = compose(preset("smoke"))
    train, holdout, cards, scaler = prepare_data(cfg)
    assert float(train[TARGET].min()) >= 1
    assert len(train) + len(holdout) > 0
    assert abs(float(train["temp"].mean())) < 1e-4
