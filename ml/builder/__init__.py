"""The EchoDialogue builder (paper appendix B): taxonomy, build pipeline stages, export, spot-check records.

Pure modules (no Django): ``stages``, ``prompts``, ``filters``, ``trajectory``, ``consistency``,
``perception``. The Django side: ``models``, ``claims`` (per-sample stage state), ``runner`` (the
stage jobs), ``export``, ``taxonomy_import``, ``admin``.
"""
