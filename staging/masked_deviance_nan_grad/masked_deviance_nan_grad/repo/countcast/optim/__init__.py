from countcast.optim.factory import build_optimizer
from countcast.optim.schedules import SCHEDULES, build_schedule

__all__ = ["SCHEDULES", "build_optimizer", "build_schedule"]
