"""Scripts (items), the takes actors record of them, and the three blind reviews that accept a take."""
