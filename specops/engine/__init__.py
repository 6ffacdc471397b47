"""The running SGLang engine: its HTTP client (through the host connection), readiness, smoke, gates, and the
journal signatures that name a failure's cause."""
