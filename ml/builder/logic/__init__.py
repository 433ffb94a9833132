"""The builder's pure logic: prompts, filters, planning, trajectories, voicing, consistency, perception.

No Django here: each function takes plain values and returns plain values, so the stages can be
tested without a database and a lab can reuse them in a script.
"""
