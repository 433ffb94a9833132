"""What the judgements say: Table 2 leaderboard, Table 8 error propagation, item drill-downs."""
