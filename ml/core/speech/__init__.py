"""The speech LM interface (``model``), its inputs, the Qwen adapters, loading, and tiny test models."""
