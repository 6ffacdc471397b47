"""ALL code that runs ON a host: stdlib only, Python 3.8+, bundled into one script text by bundle.py.

Outside this package only bundle.py is imported (tests/test_layering.py lists today's exceptions); unit tests
run the modules in-process."""
