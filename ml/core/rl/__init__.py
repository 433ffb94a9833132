"""RL with SDCA: rollouts and their scores, the GRPO update (its docstring has the maths), the loop, a heuristic scorer."""
