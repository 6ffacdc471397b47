__version__ = "0.5.20.dev0+specops.testengine"
