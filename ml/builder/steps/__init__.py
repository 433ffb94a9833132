"""The work of each stage on one unit (a sample, or a dialogue's turns): LLM stages, audio stages, planning."""
