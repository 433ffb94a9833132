"""The EchoDialogue builder (paper appendix B): taxonomy, build pipeline stages, export, spot-check records.

Pure (no Django): ``stages`` (names, order, versions, reasons), ``config`` (a build's settings) and
``logic/`` (prompts, filters, planning, trajectories, voicing, consistency, perception, taxonomy
files). The Django side: ``models``, ``claims`` (per-sample stage state), ``llm`` (endpoints and
the answer store), ``steps/`` (what each stage does to a unit), ``runner`` (stage jobs),
``export``, ``taxonomy_import``, ``access``, ``admin``, ``views``, ``urls``.
"""
