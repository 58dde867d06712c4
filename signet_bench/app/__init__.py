"""The notebooks served as an app, the embedded demo, and their display helpers."""
