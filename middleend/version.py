"""The middle-end's version (reported in every compile response)."""

__version__ = "0.3.0"
