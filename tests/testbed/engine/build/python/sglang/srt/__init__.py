"""Server runtime of the test engine (shaped like sglang.srt)."""
