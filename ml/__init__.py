"""The ml app: EchoChat training and inference.

`ml.core` is plain torch/transformers with no Django import (a GPU box runs it as
`python -m ml.cli`); `ml.jobs` is the Django side that runs it as `gpu` queue jobs.
"""
