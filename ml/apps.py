from __future__ import annotations

from django.apps import AppConfig


class MlConfig(AppConfig):
    name = "ml"
    verbose_name = "EchoChat training and inference"
