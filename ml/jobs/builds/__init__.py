"""Training jobs on a finished EchoDialogue build's exported records (``ml.builder.export``)."""
