from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core import checks


class SimstoreConfig(AppConfig):
    name = "simstore.contrib.django"
    label = "simstore"
    verbose_name = "simstore near-duplicate store"

    def ready(self) -> None:
        checks.register(check_settings)


def check_settings(app_configs: Any = None, **_kwargs: Any) -> list[checks.CheckMessage]:
    """The ``SIMSTORE`` setting, checked when the project starts (``manage.py check``)."""
    from simstore.contrib.django import store_settings
    from simstore.errors import InvalidInput

    try:
        store_settings()
    except InvalidInput as error:
        return [checks.Error(str(error), id="simstore.E001")]
    return []
