"""Records in and out: reading input files (``records``), feeding them to a store (``ingest``),
exporting kept rows (``export``), the hand-over directory a batch job writes and a store loads
(``handover``) and the HTML report (``report``).

Functions here take a ``SimStore`` as an argument and never import the facade at run time (only
for type hints), so ``simstore.store`` can offer them as methods. May import storage, policy and
text.
"""
