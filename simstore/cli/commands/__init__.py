"""The commands, one module per kind; importing a module registers its commands on ``main``."""
