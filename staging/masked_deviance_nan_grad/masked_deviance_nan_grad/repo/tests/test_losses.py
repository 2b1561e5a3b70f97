import math

import torch

from countcast.losses import build_loss
from countcast.losses.poisson import poisson_deviance
from countcast.losses.tweedie import tweedie_deviance


def test_poisson_deviance_values():
    y = torch.tensor([0.0, 1.0, 4.0])
    eta = torch.log(torch.tensor([0.5, 1.0, 2.0]))
    got = poisson_deviance(eta, y)
    want = [2 * 0.5, 0.0, 2 * (4 * math.log(2.0) - 2.0)]
    assert torch.allclose(got, torch.tensor(want), atol=1e-6)


def test_poisson_deviance_zero_at_mean():
    y = torch.tensor([3.0, 7.0])
    assert torch.allclose(poisson_deviance(torch.log(y), y), torch.zeros(2), atol=1e-6)


def test_poisson_gradient_is_mu_minus_y():
    y = torch.tensor([2.0, 5.0])
    eta = torch.tensor([0.3, 1.1], requires_grad=True)
    poisson_deviance(eta, y).sum().backward()
    assert torch.allclose(eta.grad, 2 * (torch.exp(eta.detach()) - y), atol=1e-5)


def test_tweedie_close_to_poisson_for_power_near_one():
    y = torch.tensor([1.0, 3.0, 6.0])
    eta = torch.log(torch.tensor([1.5, 2.5, 5.0]))
    assert torch.allclose(tweedie_deviance(eta, y, 1.001), poisson_deviance(eta, y), atol=2e-2)


def test_reductions():
    y = torch.tensor([1.0, 2.0])
    eta = torch.zeros(2)
    loss = build_loss("poisson")
    assert loss(eta, y).shape == ()
    assert build_loss("poisson", reduction="none")(eta, y).shape == (2,)
