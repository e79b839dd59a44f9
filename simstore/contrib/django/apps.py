from __future__ import annotations

from django.apps import AppConfig


class SimstoreConfig(AppConfig):
    name = "simstore.contrib.django"
    label = "simstore"
    verbose_name = "simstore near-duplicate store"
