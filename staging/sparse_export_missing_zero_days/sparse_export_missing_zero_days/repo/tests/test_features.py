import unittest

import numpy as np

from features import Standardizer, history_features
from tests.helpers import toy_sales


class HistoryFeatures(unittest.TestCase):
    def test_lags_and_rolling_mean(self):
        sales = toy_sales({("N1", "A"): [1, 2, 3, 4, 5, 6], ("N1", "B"): [0, 0, 7, 0, 1, 2]})
        rows, hist = history_features(sales, (1, 2), 3)
        self.assertEqual(rows.day.tolist(), [3, 4, 5, 3, 4, 5])
        np.testing.assert_allclose(hist[:3, 0], [3, 4, 5])
        np.testing.assert_allclose(hist[:3, 1], [2, 3, 4])
        np.testing.assert_allclose(hist[:3, 2], [2, 3, 4])
        np.testing.assert_allclose(hist[3:, 0], [7, 0, 1])
        np.testing.assert_allclose(hist[3:, 2], [7 / 3, 7 / 3, 8 / 3], rtol=1e-6)

    def test_rows_in_any_order(self):
        sales = toy_sales({("S2", "A"): [5, 1, 0, 2, 3], ("E1", "A"): [1, 1, 1, 1, 1]})
        shuffled = sales.select(np.array([4, 9, 0, 2, 7, 1, 3, 8, 5, 6]))
        a = history_features(sales, (1,), 2)[1]
        b = history_features(shuffled, (1,), 2)[1]
        np.testing.assert_allclose(a, b)

    def test_standardizer(self):
        x = np.array([[0.0, 1.0], [3.0, 1.0], [7.0, 1.0]], dtype=np.float32)
        z = Standardizer().fit(x)(x)
        np.testing.assert_allclose(z.mean(axis=0), [0, 0], atol=1e-5)


if __name__ == "__main__":
    unittest.main()
