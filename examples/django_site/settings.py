"""Settings of a minimal Django site that uses simstore (see manage.py)."""

from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "example-only"  # noqa: S105 - a demo, never deployed
DEBUG = True
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["simstore.contrib.django"]
ROOT_URLCONF = "urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "site.db"}}
USE_TZ = True
SIMSTORE = {"NAMESPACE": "comments", "KEEP": "2d"}
