"""specops: deploy patched SGLang speculative-decoding builds over SSH, keep hosts healthy, roll back."""

__version__ = "0.1.0"
