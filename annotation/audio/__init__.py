"""Pure audio code (no Django): upload checks and normalisation, acoustic analysis, what the
acoustics suggest for perception labels, and eSpeak NG speech synthesis.
"""
