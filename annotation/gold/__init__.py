"""From submitted annotations to a gold reference: adjudication, fast-track, gold versions,
export/import, and inter-annotator agreement.
"""
