"""The annotation app: scripts are recorded, blind-reviewed, labelled and adjudicated into gold.

Subpackages in pipeline order: `recording` (items, takes, reviews), `labelling` (annotations,
drafts, the label schema), `gold` (adjudication, gold versions, import/export, agreement); `audio`
is pure DSP used by all three, `demo` seeds demo data.
"""
