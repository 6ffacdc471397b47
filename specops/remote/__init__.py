"""ALL code that runs ON a host: stdlib only, Python 3.8+, bundled into one script text by bundle.py.

Imported at run time by nobody but the bundler (and by unit tests, which run it in-process)."""
