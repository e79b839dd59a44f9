"""What every benchmark shares, so that each script holds only what it measures.

- ``corpus``: the quality dataset's texts, the composed window texts (``compose``), random
  fingerprints and their planted neighbours, the window's days and each text's moment;
- ``measure``: percentiles, timers, memory, the machine a run was on, the load average;
- ``databases``: SQLite files (page cache, markers, sizes by ``dbstat``), scratch server
  databases and their sizes, settings and files;
- ``fills``: filling a store through the library's own ``SimStore.load`` and ``add_many``
  (benchmarks never write simstore's tables by hand);
- ``checkouts``: running one benchmark step against another simstore checkout;
- ``results``: the file a run's figures go to, ``benchmarks/results/NAME-PARAMS-DATE.json``.
"""
