"""Configuration: the inventory (specops.toml), profiles, SGLang's rules, constrained fields, secrets.

Pure and local: nothing here talks to a host."""
