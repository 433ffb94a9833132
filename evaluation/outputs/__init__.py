"""Systems under evaluation and the outputs they produced for EchoEval items."""
