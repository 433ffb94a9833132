"""What the judgements say: Table 2 leaderboard, Table 8 error propagation, item drill-downs and
Table 3 judge-human agreement. Sits above judging (it aggregates judgements); admins only."""
