"""Speculative decoding pieces of the test engine."""
