import unittest

import numpy as np

from exports import ExportError, Sales, validate
from tests.helpers import toy_sales
from timeline import Timeline

STORES = {"E1": "east", "E2": "east", "N1": "north"}


class Validate(unittest.TestCase):
    def setUp(self):
        self.timeline = Timeline("2026-09-07", 84)

    def test_negative_units_count_as_zero(self):
        sales = toy_sales({("E1", "A"): [2, -1, 3]})
        self.assertEqual(validate(sales, "east", self.timeline, STORES).units.tolist(), [2, 0, 3])

    def test_foreign_store(self):
        with self.assertRaises(ExportError):
            validate(toy_sales({("N1", "A"): [1]}), "east", self.timeline, STORES)

    def test_duplicates(self):
        sales = toy_sales({("E1", "A"): [1, 2]})
        dup = Sales.concat([sales, sales])
        with self.assertRaises(ExportError):
            validate(dup, "east", self.timeline, STORES)

    def test_window(self):
        sales = toy_sales({("E2", "A"): [1]}, first_day=84)
        with self.assertRaises(ExportError):
            validate(sales, "east", self.timeline, STORES)

    def test_dates(self):
        self.assertEqual(self.timeline.day("2026-11-29"), 83)
        self.assertEqual(self.timeline.weekday(np.array([0])).tolist(), [0])


if __name__ == "__main__":
    unittest.main()
