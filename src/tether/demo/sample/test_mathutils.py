import unittest

from mathutils import clamp, mean


class MeanTest(unittest.TestCase):
    def test_mean_of_three(self):
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_mean_of_one(self):
        self.assertEqual(mean([5]), 5)

    def test_empty_raises(self):
        with self.assertRaises(ValueError):
            mean([])


class ClampTest(unittest.TestCase):
    def test_inside(self):
        self.assertEqual(clamp(5, 0, 10), 5)

    def test_outside(self):
        self.assertEqual(clamp(-3, 0, 10), 0)
        self.assertEqual(clamp(42, 0, 10), 10)


if __name__ == "__main__":
    unittest.main()
