"""EchoChat in plain torch/transformers, no Django: speech LM interface, AAA, SDCA, SFT, RL, reward
model, inference and checkpoints.
"""
