"""A minimal Django site using simstore.

Run: ``pip install 'simstore[django]'``, then in this folder ``python manage.py migrate`` (creates
simstore's tables) and ``python manage.py runserver``; POST text to /comments/<key>.
"""

import os
import sys

from django.core.management import execute_from_command_line

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
    execute_from_command_line(sys.argv)
