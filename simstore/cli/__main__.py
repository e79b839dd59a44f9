"""``python -m simstore.cli``."""

from simstore.cli import main

main(prog_name="simstore")
