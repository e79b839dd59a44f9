"""simstore's benchmarks: ``python -m benchmarks`` lists them, ``python -m benchmarks NAME --help``
tells how to run one. Results go to ``benchmarks/results`` (see its ``INDEX.md``)."""
