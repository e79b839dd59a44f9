"""Storage: the tables (``schema``), engines and connections (``db``, ``_connections``), the SQL
each dialect runs (``_prepared``), namespaces, finding candidates (``_finder``) and writing
decisions (``_writer``) under the locks of ``locking``, retention windows and time partitions,
maintenance (purge) and the alembic migrations (``migrate``).

May import the policy and text layers, ``simstore.results`` and ``simstore.errors``; never
``simstore.io``, the facade ``simstore.store`` or a front end.
"""
