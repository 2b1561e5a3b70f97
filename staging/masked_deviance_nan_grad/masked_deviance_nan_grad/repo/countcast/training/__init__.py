"""Training: one member (:mod:`loop`), its step (:mod:`step`), the ensemble (:mod:`ensemble`)."""
