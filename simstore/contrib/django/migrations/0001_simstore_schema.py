"""Create or upgrade simstore's tables with simstore's own alembic migrations."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def upgrade_simstore(apps: Any, schema_editor: Any) -> None:
    from simstore.contrib.django import configured_alias, store_url
    from simstore.storage import migrate

    if schema_editor.connection.alias == configured_alias():
        migrate.upgrade(store_url())


class Migration(migrations.Migration):
    # simstore connects on its own; inside Django's transaction SQLite would be locked against it
    atomic = False
    dependencies: list[tuple[str, str]] = []  # noqa: RUF012 - Django's own convention
    operations = [migrations.RunPython(upgrade_simstore, migrations.RunPython.noop)]  # noqa: RUF012
