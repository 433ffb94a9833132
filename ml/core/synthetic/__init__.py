"""A synthetic speech task where emotion lives in prosody alone, and the probes run on it (``bench/``)."""
