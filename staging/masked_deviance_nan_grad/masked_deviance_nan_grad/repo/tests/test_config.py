import pytest

from countcast.config import JobConfig, apply_overrides, compose, preset
from countcast.config.compose import ConfigError


def test_overrides_parse_types():
    cfg = apply_overrides(JobConfig(), ["members=3", "lr=0.02", "model=glm"])
    assert (cfg.members, cfg.lr, cfg.model) == (3, 0.02, "glm")


def test_compose_sections():
    c = compose(preset("smoke"))
    assert c.ensemble.members == 2
    assert c.model.name == "mlp"
    assert c.augment.name == "thinning"


def test_invalid():
    with pytest.raises(ConfigError):
        compose(JobConfig(bag_fraction=0.0))
