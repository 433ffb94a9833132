"""A dialogue turn's conversation so far, as its actor and its reviewers hear it (recording side)."""
