"""Multimodal processors (only the one whose import pulls in torchcodec)."""
