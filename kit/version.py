"""The kit's version (pyproject.toml's ``version``), in a module of its own so that any
module can name it without importing the package ``kit``."""

__version__ = "0.1.0"
