"""Consent of the people whose voices and judgements the studio holds: versioned consent texts,
each person's consent records (scopes, text version, date), giving and withdrawing consent, and
the one rule on takes (`annotation.recording.models.TakeQuerySet.consented_for`)."""
