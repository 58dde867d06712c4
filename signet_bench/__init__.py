"""signet-bench: build, train, judge, export and serve Signet's predictive memory scorer."""

__version__ = "0.1.0"
