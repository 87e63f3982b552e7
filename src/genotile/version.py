"""The package version (a leaf module: modules import it from here, so none imports the package itself)."""

__version__ = "0.1.0"
