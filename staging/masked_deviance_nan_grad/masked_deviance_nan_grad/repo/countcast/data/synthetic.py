"""The demand export, simulated: daily units of each item in each store.

Units follow a Poisson law whose log-rate is a sum of store, item, weekday, promotion, price and
temperature effects. Like the real export (built from sales transactions), the table only holds
store-item-days that sold at least one unit.
"""

from __future__ import annotations

import math

import torch

from countcast.config.sections import DataSection
from countcast.data.schema import OFFSET, TARGET, Cardinalities
from countcast.data.table import Table
from countcast.utils.seeding import generator

DOW_EFFECT = (0.0, -0.05, -0.02, 0.03, 0.12, 0.25, 0.18)


def simulate(cfg: DataSection) -> tuple[Table, Cardinalities]:
    g = generator(cfg.data_seed)
    s, i, d = cfg.stores, cfg.items, cfg.days
    store_eff = 0.25 * torch.randn(s, generator=g)
    item_eff = cfg.rate_spread * torch.randn(i, generator=g)
    price0 = torch.exp(0.8 * torch.randn(i, generator=g) + 1.0)

    store = torch.arange(s).repeat_interleave(i * d)
    item = torch.arange(i).repeat_interleave(d).repeat(s)
    day = torch.arange(d).repeat(s * i)
    dow = day % 7
    promo = (torch.rand(s * i * d, generator=g) < cfg.promo_share).float()
    price = price0[item] * (1.0 - 0.2 * promo) * torch.exp(0.05 * torch.randn(s * i * d, generator=g))
    temp = 18.0 + 6.0 * torch.sin(2 * math.pi * day / 28.0) + 2.0 * torch.randn(s * i * d, generator=g)
    dow_eff = torch.tensor(DOW_EFFECT)[dow]

    log_rate = (cfg.base_rate + store_eff[store] + item_eff[item] + dow_eff + 0.45 * promo
                - 0.3 * torch.log(price / price0[item]) + 0.01 * (temp - 18.0))
    units = torch.poisson(torch.exp(log_rate), generator=g)

    table = Table({
        "store": store, "item": item, "dow": dow,
        "log_price": torch.log(price), "promo": promo, "temp": temp,
        TARGET: units, OFFSET: torch.zeros_like(units),
        "day": day,
    })
    table = table.where(units > 0)  # the export is built from sales: no zero rows
    return table, Cardinalities(store=s, item=i)
