"""Rubric judging: the paper's scoring rules (pure), judge prompts, judge runs, scoring by hand."""
