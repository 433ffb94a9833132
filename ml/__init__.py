"""EchoChat model code (torch and transformers only; nothing here imports Django)."""
