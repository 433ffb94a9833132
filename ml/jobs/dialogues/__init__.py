"""Dialogues on the ML side: turn histories in dataset snapshots, and inference turn by turn."""
