import pytest

from countcast.registry import Registry, RegistryError


def test_register_and_alias():
    r = Registry("thing")

    @r.register("alpha", "a")
    class Alpha:
        pass

    assert r.get("A") is Alpha
    assert "alpha" in r and "a" in r


def test_unknown_suggests():
    r = Registry("thing")
    r.add("poisson", object())
    with pytest.raises(RegistryError, match="did you mean"):
        r.get("poison")
