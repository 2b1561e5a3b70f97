"""sandbox-env: a real-execution environment in which LLM agents debug PyTorch training repos."""

__version__ = "0.1.0"
