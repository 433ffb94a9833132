"""The human side of the EchoDialogue builder: the spot-check queue and the build pages.

Pure: ``rules`` (which stage a spot-check reason blames, acceptance per stage, which stages a
tightened threshold redoes) and ``sampling`` (the seeded, stratified draw). Django: ``access``,
``queue`` (draw, claim and decide spot-checks), ``retune`` (tighten a filter and re-run),
``reports`` (the build page's figures), ``forms``, ``views``, ``urls``.
"""
