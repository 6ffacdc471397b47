"""Multimodal pieces: importing them loads torchcodec, as SGLang does for multimodal archs."""
