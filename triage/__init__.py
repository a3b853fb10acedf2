"""triage: turn a failed GPU training job's log into a diagnosis."""
__version__ = "0.4.0"
