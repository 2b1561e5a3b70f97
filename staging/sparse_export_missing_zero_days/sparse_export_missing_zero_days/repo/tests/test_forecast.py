import unittest

import numpy as np

from features import history_features
from forecast import SalesHistory, history_at
from tests.helpers import toy_sales


class ServingFeatures(unittest.TestCase):
    def test_serving_matches_training_features(self):
        sales = toy_sales({("W1", "A"): [2, 0, 1, 4, 0, 3, 1, 1], ("W2", "B"): [0, 1, 0, 0, 5, 1, 0, 2]})
        rows, hist = history_features(sales, (1, 3), 4)
        served = history_at(SalesHistory(sales), rows.store, rows.item, rows.day, (1, 3), 4)
        np.testing.assert_allclose(served, hist, rtol=1e-6)

    def test_no_history(self):
        sales = toy_sales({("W1", "A"): [2, 2]}, first_day=10)
        served = history_at(SalesHistory(sales), np.array(["W1"], dtype=object), np.array(["A"], dtype=object),
                            np.array([10]), (1,), 2)
        self.assertEqual(served.tolist(), [[0.0, 0.0]])


if __name__ == "__main__":
    unittest.main()
