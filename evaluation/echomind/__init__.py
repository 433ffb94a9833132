"""EchoMind in the studio: vocal-attribute taxonomy, delivery sets, multiple-choice tasks, answers,
scoring and the EchoMind leaderboard (issue 28; EchoMind, arXiv 2510.22758)."""
