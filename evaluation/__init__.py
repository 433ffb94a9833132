"""The evaluation app: systems' outputs, rubric judging, results tables and human studies.

Subpackages in pipeline order: `outputs` (systems and their imported outputs), `judging` (LLM
judge runs and rubric scoring by hand), `results` (leaderboard, error propagation, drill-downs),
`studies` (blind MOS / helpfulness listening studies).
"""
