"""Annotating accepted recordings: the label schema, assignment, drafts, autosave, submit, reopen."""
