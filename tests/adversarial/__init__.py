"""Reward-hacking corpus: scripted cheating episodes played in mock and docker mode."""
