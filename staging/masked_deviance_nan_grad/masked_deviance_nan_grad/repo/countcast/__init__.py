"""countcast: training count-demand models (Poisson-family GLMs and MLPs) for store x item x day data.

The public entry points are :func:`countcast.training.ensemble.train_ensemble` (what the nightly job
runs) and the config layer in :mod:`countcast.config`. Everything else is plumbing that plugs into
registries (models, losses, activations, callbacks, schedules) so that presets can name components
by string.
"""

from countcast.version import __version__

__all__ = ["__version__"]
