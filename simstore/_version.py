"""The package version, kept apart so that every module can import it without cycles."""

__version__ = "0.4.0"
