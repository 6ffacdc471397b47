"""Local staging of a build before any host is touched: the staged tree, file hashes, patches, the tree cache."""
