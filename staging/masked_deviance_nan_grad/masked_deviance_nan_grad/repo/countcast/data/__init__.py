"""Data: the synthetic store x item x day export, splits, features, loaders and augmentation."""
